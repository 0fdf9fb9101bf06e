"""Error kinds and console lines of errored episodes."""
from labference_ros.core.failures import console_line, error_kind
from labference_ros.core.summary import format_table, summarize


def test_kinds_of_the_messages_this_project_writes():
    cases = {
        "policy_bridge start refused: policy session reset failed: policy server http://127.0.0.1:18999/reset "
        "unreachable (connection refused)": "policy_unreachable",
        "policy_bridge reported an error: evaluation invalid: policy server http://h/act answered HTTP 500":
            "policy_server_error",
        "policy_bridge reported an error: evaluation invalid: policy server http://h/act sent malformed JSON":
            "policy_bad_reply",
        "policy_bridge reported an error: evaluation invalid: policy server http://h/act timed out after 2 s":
            "policy_timeout",
        "policy_bridge reported an error: evaluation invalid: OpenPI server ws://h:1 reply too large: a frame "
        "over the limit of 1048576 bytes (max_reply_bytes)": "policy_reply_too_large",
        "referee finish refused: cannot write the episode's records: No space left on device (/x)": "disk_full",
        "policy_bridge start: /policy_bridge/start_episode did not answer within 3 s": "service_timeout",
        "lab_sim left the graph during the episode": "node_left",
        "sim time did not advance for 60 s": "sim_stalled",
        "episode runner stopped during the episode": "interrupted",
        "hardware_fault: joint states stale: none for 0.31 s (limit 0.25 s)": "hardware_fault",
        "hardware_fault: robot error: joint_reflex (robot mode reflex)": "hardware_fault",
        "something new": "other",
    }
    for message, kind in cases.items():
        assert error_kind(message) == kind, message
    assert error_kind(None) is None and error_kind("") is None


def test_console_line_drops_the_wrappers():
    line = console_line("0001_abc", "policy_bridge start refused: policy session reset failed: policy server "
                                    "http://127.0.0.1:18999/reset unreachable (connection refused)")
    assert line == ("episode 0001_abc: policy server http://127.0.0.1:18999/reset unreachable "
                    "(connection refused) [policy_unreachable]")


def test_summary_table_names_the_error_kinds():
    ok = {"episode_id": "a", "system": "http", "condition": "basic", "status": "ok",
          "scores": {"first_choice_correct": True, "valid_complete": True}}
    bad = [{"episode_id": f"e{k}", "system": "http", "condition": "basic", "status": "error", "error": msg}
           for k, msg in enumerate(["x timed out after 1 s", "y timed out after 1 s", "z answered HTTP 500"])]
    s = summarize([ok, *bad])
    assert s["overall"]["errors"] == 3
    assert s["overall"]["error_kinds"] == {"policy_server_error": 1, "policy_timeout": 2}
    assert "3 (policy_server_error 1, policy_timeout 2)" in format_table(s)
    assert summarize([ok])["overall"]["error_kinds"] == {}
