"""policy_bridge in the ROS graph (lab_sim, balance, referee as processes):
display_reader completes an episode through topics and sync advance; the
bridge logs requested vs applied chunks and publishes receipts."""
from __future__ import annotations

import json
import pathlib
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "test" / "ros"))
from ros_domains import own_domain  # noqa: E402
from rosproc import Proc  # noqa: E402

from labference_ros.core.records import read_jsonl  # noqa: E402
from labference_ros.nodes.policy_bridge import ROWS_PER_ADVANCE  # noqa: E402
from labference_ros.rosenv import loopback_environ  # noqa: E402

IMAGE = ["-p", "image_width:=320", "-p", "image_height:=240"]


@pytest.fixture
def domain():
    with own_domain() as domain_id:
        yield domain_id


def start_graph(domain: str, *bridge_params: str) -> tuple[dict, dict]:
    """lab_sim, balance, referee and policy_bridge (with these parameters) as processes."""
    env = loopback_environ()
    env["MUJOCO_GL"] = "egl"
    env["ROS_DOMAIN_ID"] = domain
    bridge = [arg for p in bridge_params for arg in ("-p", p)]
    nodes = {name: Proc([sys.executable, "-m", f"labference_ros.nodes.{name}", *(
        ["--ros-args", *IMAGE] if name == "lab_sim" else
        ["--ros-args", *bridge] if name == "policy_bridge" else [])], env=env)
        for name in ("lab_sim", "balance", "referee", "policy_bridge")}
    return nodes, env


@pytest.mark.slow
def test_display_reader_through_the_bridge(tmp_path, domain):
    nodes, env = start_graph(domain, "system:=display_reader")
    try:
        driver = Proc([sys.executable, str(REPO / "test" / "peers" / "bridge_episode.py"),
                       str(tmp_path / "ep"), "2"], env=env)
        lines = driver.wait_for("RESULT", timeout=500)
        driver.stop()
        assert lines, driver.seen[-30:] + [l for p in nodes.values() for l in p.seen[-10:]]
        result = json.loads(lines[0][len("RESULT "):])
        for name, p in nodes.items():
            assert p.popen.poll() is None, f"{name} died: {p.seen[-20:]}"
    finally:
        for p in nodes.values():
            p.stop()
    assert result["status"]["state"] == "done", result["status"]
    assert result["status"]["reason"] == "policy_stop"
    assert result["profile"]["name"] == "display_reader" and result["profile"]["privileged"] is False
    s = result["scores"]
    assert s["physically_complete"] is True and s["first_choice_correct"] is True, s
    log = read_jsonl(tmp_path / "ep" / "policy_actions.jsonl")
    chunks = [r for r in log if r["record"] == "chunk"]
    receipts = [r for r in log if r["record"] == "receipt"]
    assert chunks and len(receipts) >= len(chunks)
    assert all(c["status"] == "accepted" and c["requested"] == c["applied"] for c in chunks)
    assert all(c["inference_wall_s"] >= 0 for c in chunks)
    assert receipts[0]["camera_stamps"]["front"] == 0.0 and receipts[0]["image_shapes"]["front"] == [240, 320, 3]


# Sync mode takes the joint state from lab_sim's answer to each advance; realtime
# subscribes to it. A non-privileged system's bridge never subscribes to evaluator state.
@pytest.mark.parametrize("step_mode, subscribers", [
    ("sync", {"/joint_states": 0, "/evaluator/world_state": 0}),
    ("realtime", {"/joint_states": 1, "/evaluator/world_state": 0})])
def test_unreachable_policy_server_is_an_error_status_not_a_crash(domain, step_mode, subscribers):
    from fake_servers import free_port
    env = loopback_environ()
    env["ROS_DOMAIN_ID"] = domain
    params = json.dumps({"url": f"http://127.0.0.1:{free_port()}", "timeout_s": 2.0})
    bridge = Proc([sys.executable, "-m", "labference_ros.nodes.policy_bridge", "--ros-args",
                   "-p", "system:=http", "-p", f"system_params_json:='{params}'",  # YAML-quoted
                   "-p", f"step_mode:={step_mode}"], env=env)
    try:
        probe = Proc([sys.executable, str(REPO / "test" / "peers" / "bridge_probe.py")], env=env)
        lines = probe.wait_for("PROBE", timeout=90)
        probe.stop()
        assert lines, probe.seen[-20:] + bridge.seen[-20:]
        out = json.loads(lines[0][len("PROBE "):])
        assert bridge.popen.poll() is None, bridge.seen[-20:]
    finally:
        bridge.stop()
    assert out["success"] is False and "unreachable" in out["message"]
    assert out["status"]["state"] == "error" and "unreachable" in out["status"]["reason"]
    assert out["subscribers"] == subscribers


@pytest.mark.slow
def test_a_pause_stops_the_arm_after_the_rows_sent_and_the_episode_resumes(tmp_path, domain):
    nodes, env = start_graph(domain, "system:=scripted_expert", "safety:=franka")
    try:
        driver = Proc([sys.executable, str(REPO / "test" / "peers" / "bridge_pause.py"), str(tmp_path / "ep")],
                      env=env)
        lines = driver.wait_for("RESULT", timeout=500)
        driver.stop()
        assert lines, driver.seen[-30:] + [l for p in nodes.values() for l in p.seen[-10:]]
        result = json.loads(lines[0][len("RESULT "):])
    finally:
        for p in nodes.values():
            p.stop()
    assert result["pause"] == [True, "paused"] and result["resume"] == [True, "running"]
    paused_at = result["paused_at"]
    log = read_jsonl(tmp_path / "ep" / "policy_actions.jsonl")
    kinds = [r["record"] for r in log]
    # No target beyond the rows already sent (those of the advance that runs and of the one
    # asked ahead, stamped from the bridge's boundary at the pause on): the hold sends none.
    paused_t = log[kinds.index("paused")]["t"]
    in_flight_end = paused_t + 2 * ROWS_PER_ADVANCE * 0.02
    assert all(t < in_flight_end - 1e-9 for t in result["sent_during_pause"]), (paused_t, result["sent_during_pause"])
    during = result["during"]
    assert during[-1][0] >= paused_at + 1.5  # sim time went on
    settled = [q for t, q in during if t >= in_flight_end + 0.5]  # decelerated from the last row sent
    drift = max(abs(a - b) for q in settled for a, b in zip(q, settled[0]))
    assert drift < 1e-3, drift  # the arm stands still
    assert result["status"]["state"] == "done" and result["scores"]["physically_complete"] is True
    assert result["profile"]["safety"] == "franka"  # what run.json's policy section keeps (a cell of its own)
    assert kinds.count("paused") == 1 and kinds.count("resumed") == 1
    paused = log[kinds.index("paused")]
    # (Its rows_dropped, the chunk's rows not yet sent, is 0 when the pause came with the last in flight.)
    assert paused["reason"] == "operator"
    assert not [r for r in log if r["record"] == "chunk" and r["status"] != "accepted"]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["lost", "slow"])
def test_a_first_advance_whose_reply_is_lost_is_asked_again(domain, mode):
    """A service reply can be lost while discovery is incomplete (the server's writer
    has not matched the client's reader yet). The episode's first advance is of zero
    duration, so the bridge asks again instead of failing the episode; a refusal
    because the first one still runs is no answer, and the first one's late success
    counts (slow)."""
    env = loopback_environ()
    env["ROS_DOMAIN_ID"] = domain
    bridge = Proc([sys.executable, "-m", "labference_ros.nodes.policy_bridge", "--ros-args",
                   "-p", "system:=scripted_expert", "-p", "observation_timeout_s:=8.0"], env=env)
    try:
        peer = Proc([sys.executable, str(REPO / "test" / "peers" / "lost_advance_reply.py"), mode], env=env)
        lines = peer.wait_for("RESULT", timeout=180)
        peer.stop()
        assert lines, peer.seen[-20:] + bridge.seen[-20:]
        out = json.loads(lines[0][len("RESULT "):])
        assert bridge.popen.poll() is None, bridge.seen[-20:]
        bridge.wait_for("no such line", timeout=3)  # collects what the bridge printed
    finally:
        bridge.stop()
    assert out["started"] is True
    durations = [d for d, _ in out["requests"]]
    arrivals = [t for _, t in out["requests"]]
    # asked again after PRIME_RESEND_S (1 s), with slack for a loaded machine
    if mode == "lost":
        assert durations[:3] == [0.0, 0.0, 0.0] and len(durations) == 3, out
        assert arrivals[1] >= 0.5 and arrivals[2] - arrivals[1] >= 0.5, out
    else:
        assert durations == [0.0, 0.0] and arrivals[1] >= 0.5, out
    # Past the prime: with no camera on the graph, the observation is what times out.
    assert out["status"]["state"] == "error", out
    assert "no complete observation at sim time 0.000" in out["status"]["reason"], out
    asked_again = "the first advance of episode ep0 has no answer after 1.0 s: asking again"
    assert any(asked_again in line for line in bridge.seen), bridge.seen[-20:]


def test_a_start_or_finish_asked_again_gets_the_first_answer_and_resets_the_server_once(tmp_path, domain):
    """The runner asks again when a reply is lost: the bridge never resets the tested system a
    second time, nor ends its episode twice (nodes/policy_bridge.py, _answer_once)."""
    from fake_servers import FakeHttpPolicy
    env = loopback_environ()
    env["ROS_DOMAIN_ID"] = domain
    with FakeHttpPolicy() as server:
        out = _start_and_finish_twice(server, env, tmp_path)
    assert out["start"][0] is True and out["start_again"] == out["start"], out
    assert out["finish"][0] is True and out["finish_again"] == out["finish"], out
    assert server.resets == 1


def _start_and_finish_twice(server, env, tmp_path) -> dict:
    params = json.dumps({"url": server.url, "timeout_s": 5.0})
    bridge = Proc([sys.executable, "-m", "labference_ros.nodes.policy_bridge", "--ros-args",
                   "-p", "system:=http", "-p", f"system_params_json:='{params}'", "-p", "match_timeout_s:=0.5"],
                  env=env)
    run_dir = tmp_path / "run" / "episodes" / "0000_repeat"
    try:
        probe = Proc([sys.executable, str(REPO / "test" / "peers" / "bridge_repeat_probe.py"), str(run_dir)],
                     env=env)
        lines = probe.wait_for("PROBE", timeout=120)
        probe.stop()
        assert lines, probe.seen[-20:] + bridge.seen[-20:]
        assert bridge.popen.poll() is None, bridge.seen[-20:]
    finally:
        bridge.stop()
    return json.loads(lines[0][len("PROBE "):])
