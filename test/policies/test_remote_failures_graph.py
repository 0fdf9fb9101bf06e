"""A remote policy that fails, through the whole graph (`labference launch`):
one console line per errored episode naming its cause, the error kinds in the
final table, exit status 3 (ran, not every episode scored), records that
parse, no traceback. A 10^6-row reply is refused before any of it is logged,
published or executed."""
from __future__ import annotations

import json

import pytest

from fake_servers import FakeHttpPolicy, FakeOpenPiServer, free_port
from graph_checks import FAST, assert_records_parse, console, episode_lines, launch, tree_bytes

# The stated bound for an episode refused for a 10^6-row reply (record:=false): its
# directory holds the referee's records and a few bridge lines, never the reply
# (the reply itself is over 50 MB).
REFUSED_EPISODE_MAX_BYTES = 256 * 1024


@pytest.mark.slow
def test_http_server_faults_each_get_a_line_and_exit_3(tmp_path):
    out = tmp_path / "run"
    with FakeHttpPolicy(cycle=["server_error", "malformed", "slow", "huge"], delay_s=4.0) as server:
        proc = launch(out, "system:=http", "episodes:=4", *FAST,
                      "system_params:=" + json.dumps({"url": server.url, "timeout_s": 1.5}))
    text = console(proc)
    assert proc.returncode == 3, text[-4000:]
    assert "Traceback" not in text
    act = f"policy server {server.url}/act"
    lines = episode_lines(proc)
    assert len(lines) == 4, lines
    assert lines[0].endswith(f"{act} answered HTTP 500 [policy_server_error]"), lines
    assert lines[1].endswith(f"{act} sent malformed JSON [policy_bad_reply]"), lines
    assert lines[2].endswith(f"{act} timed out after 1.5 s [policy_timeout]"), lines
    assert f"{act} reply too large: " in lines[3] and "over the limit of 1048576 bytes" in lines[3], lines
    assert "4 (policy_bad_reply 1, policy_reply_too_large 1, policy_server_error 1, policy_timeout 1)" in text
    assert "4 of 4 episodes were not scored" in text
    attempts = assert_records_parse(out)
    assert [a["error_kind"] for a in attempts] == ["policy_server_error", "policy_bad_reply", "policy_timeout",
                                                   "policy_reply_too_large"]
    # The huge reply: one validity event, nothing of it logged or executed, records bounded.
    huge = out / "episodes" / attempts[3]["episode_id"]
    log = [json.loads(line) for line in (huge / "policy_actions.jsonl").read_text().splitlines()]
    assert [r["record"] for r in log if r["record"] != "receipt"] == ["end"]
    end = log[-1]
    assert end["state"] == "error" and "reply too large" in end["reason"]
    # No physics after the reply: the episode ends at the sim time of the observation it answered.
    assert end["t"] == [r for r in log if r["record"] == "receipt"][-1]["sim_time"]
    assert tree_bytes(huge) < REFUSED_EPISODE_MAX_BYTES, tree_bytes(huge)


@pytest.mark.slow
def test_openpi_garbage_and_huge_frames(tmp_path):
    out = tmp_path / "run"
    with FakeOpenPiServer(cycle=["garbage", "huge"]) as server:
        proc = launch(out, "system:=openpi", "episodes:=2", *FAST,
                      "system_params:=" + json.dumps({"port": server.port}))
    text = console(proc)
    assert proc.returncode == 3, text[-4000:]
    assert "Traceback" not in text
    lines = episode_lines(proc)
    assert len(lines) == 2 and lines[0].endswith("[policy_bad_reply]") and "OpenPI" in lines[0], lines
    assert "frame over the limit of 1048576 bytes" in lines[1] and lines[1].endswith("[policy_reply_too_large]")
    attempts = assert_records_parse(out)
    assert tree_bytes(out / "episodes" / attempts[1]["episode_id"]) < REFUSED_EPISODE_MAX_BYTES


@pytest.mark.slow
def test_policy_server_down(tmp_path):
    out = tmp_path / "run"
    port = free_port()
    proc = launch(out, "system:=http", "episodes:=1", *FAST,
                  "system_params:=" + json.dumps({"url": f"http://127.0.0.1:{port}"}))
    text = console(proc)
    assert proc.returncode == 3, text[-4000:]
    assert "Traceback" not in text
    (line,) = episode_lines(proc)
    assert line.endswith(f"policy server http://127.0.0.1:{port}/reset unreachable (connection refused) "
                         f"[policy_unreachable]"), line
    (attempt,) = assert_records_parse(out)
    assert attempt["status"] == "error" and attempt["error_kind"] == "policy_unreachable"


@pytest.mark.slow
def test_a_policy_server_whose_reset_hangs_is_its_policy_timeout_not_a_service_timeout(tmp_path):
    """The client's timeout equals the runner's service timeout: the runner waits longer
    for the bridge's start (inner timeouts shorter than outer ones), so the episode is
    the server's policy_timeout."""
    out = tmp_path / "run"
    fast = [t for t in FAST if not t.startswith("service_timeout_s")]
    with FakeHttpPolicy(mode="reset_hang", delay_s=30.0) as server:
        proc = launch(out, "system:=http", "episodes:=1", *fast, "service_timeout_s:=8",
                      "system_params:=" + json.dumps({"url": server.url, "timeout_s": 8}))
    text = console(proc)
    assert proc.returncode == 3, text[-4000:]
    lines = episode_lines(proc)
    assert len(lines) == 1 and lines[0].endswith(f"policy server {server.url}/reset timed out after 8 s "
                                                 f"[policy_timeout]"), lines
    attempts = assert_records_parse(out)
    assert [a["error_kind"] for a in attempts] == ["policy_timeout"]
