"""RoboArena's variant of the OpenPI protocol in the real graph (`labference
launch`): the PolicyServerConfig first frame is checked against the
`roboarena` profile, each episode opens with `endpoint: reset` and its
session id, every returned joint-position row runs as one 15 Hz step, and a
server whose declared action space differs from the profile is refused
before the episode with one line naming both sides (exit 3)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from fake_droid import FakeDroidServer
from graph_checks import FAST, assert_one_chunk_per_request, assert_records_parse, console, episode_lines, launch

DROID_HZ, BRIDGE_HZ, CHUNK_LEN = 15.0, 50.0, 10
PARAMS = {"profile": "roboarena", "resize": None,
          "images": {"observation/exterior_image_1_left": "front|display", "observation/wrist_image_left": "wrist"},
          "extra": {"observation/timestamp": "sim_time"}}


@pytest.mark.slow
def test_roboarena_handshake_and_joint_position_steps(tmp_path):
    out = tmp_path / "run"
    with FakeDroidServer(rate_hz=DROID_HZ, chunk_len=CHUNK_LEN, action_space="joint_position",
                         roboarena=True) as server:
        proc = launch(out, "system:=openpi", "episodes:=1", "deadline_s:=8", *FAST,
                      "system_params:=" + json.dumps({**PARAMS, "port": server.port}))
    text = console(proc)
    assert proc.returncode == 0, text[-4000:]
    (attempt,) = assert_records_parse(out)
    assert attempt["status"] == "ok", attempt.get("errors")
    episode_id = attempt["episode_id"]
    # The reset opened the session; every request names it.
    assert server.resets == [{"session_id": episode_id}]
    assert server.decoded and all(r["session_id"] == episode_id for r in server.decoded)
    log = [json.loads(x) for x in (out / "episodes" / episode_id / "policy_actions.jsonl").read_text().splitlines()]
    chunks = [r for r in log if r["record"] == "chunk"]
    assert_one_chunk_per_request(server.decoded, chunks)
    assert all(c["status"] == "accepted" for c in chunks)
    spans = []
    for req, chunk, sent in zip(server.decoded, chunks, server.replies):
        applied = np.array(chunk["applied"])
        n = len(sent)
        assert chunk["native"]["executed_rows"] == n  # RoboArena runs every returned row
        assert len(applied) == int(np.ceil(n / DROID_HZ * BRIDGE_HZ - 1e-6))  # n steps of 1/15 s in 20 ms rows
        # Every third step ends on a bridge row (0.2 s, 0.4 s, ...); the last row holds the last step's target.
        on_rows = [k for k in (2, 5, 8) if k < n]
        assert np.allclose(applied[[10 * (j + 1) - 1 for j in range(len(on_rows))], :7], sent[on_rows, :7],
                           atol=1e-9)
        assert np.allclose(applied[-1, :7], sent[-1, :7], atol=1e-9)
        assert np.allclose(applied[0, 7], 0.08 * (1.0 - sent[0, 7]), atol=1e-12)
        spans.append(len(applied) / BRIDGE_HZ)
    assert max(len(s) for s in server.replies) == CHUNK_LEN
    end_t = log[-1]["t"]
    assert abs(sum(spans) - end_t) <= max(spans), (sum(spans), end_t)  # the requests follow the 15 Hz steps
    run = json.loads((out / "episodes" / episode_id / "run.json").read_text())
    pi = run["policy"]["openpi"]
    assert pi["protocol"] == "roboarena" and pi["server_metadata"] == server.metadata
    assert pi["conventions"]["action_space"] == "joint_position" and pi["conventions"]["open_loop_horizon"] is None
    latency = run["usage"]["policy_latency"]
    assert latency["requests"] == len(chunks) and latency["round_trip_s"]["max"] > 0
    assert all(c["latency"]["round_trip_s"] > 0 for c in chunks)


@pytest.mark.slow
def test_a_server_in_another_action_space_is_refused_before_the_episode(tmp_path):
    out = tmp_path / "run"
    with FakeDroidServer(rate_hz=DROID_HZ, chunk_len=CHUNK_LEN, action_space="joint_velocity",
                         roboarena=True) as server:
        proc = launch(out, "system:=openpi", "episodes:=1", *FAST,
                      "system_params:=" + json.dumps({**PARAMS, "port": server.port}))
    text = console(proc)
    assert proc.returncode == 3, text[-4000:]
    assert "Traceback" not in text
    (line,) = episode_lines(proc)
    assert ("convention mismatch with profile 'roboarena': action_space: server 'joint_velocity', "
            "profile 'joint_position' [convention_mismatch]") in line, line
    assert server.decoded == [] and server.resets == []  # nothing was asked of it
