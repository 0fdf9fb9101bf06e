"""A stock LIBERO checkpoint's end-effector deltas through the whole graph
with the `libero_ee` profile: every 7-column chunk is accepted, each 20 Hz
step's hand target is the previous one moved by the row (LIBERO's 0.05 m
scale), the joints reach it through the cell's robot model and the skills'
IK, and the hand in the simulator rises as the server asked."""
from __future__ import annotations

import json

import numpy as np
import pytest

from fake_libero import FakeLiberoServer
from graph_checks import FAST, assert_one_chunk_per_request, assert_records_parse, console, launch
from labference_ros.skills.kinematics import FingertipKinematics

LIBERO_HZ, BRIDGE_HZ, HORIZON, RISE_M = 20.0, 50.0, 5, 0.05


@pytest.mark.slow
def test_libero_end_effector_deltas_become_joint_targets(tmp_path):
    out = tmp_path / "run"
    with FakeLiberoServer(rise_m=RISE_M) as server:
        proc = launch(out, "system:=openpi", "episodes:=1", "deadline_s:=3", *FAST,
                      "system_params:=" + json.dumps({"port": server.port, "profile": "libero_ee"}))
    text = console(proc)
    assert proc.returncode == 0, text[-4000:]
    (attempt,) = assert_records_parse(out)
    log = [json.loads(x) for x in (out / "episodes" / attempt["episode_id"] / "policy_actions.jsonl")
           .read_text().splitlines()]
    chunks = [r for r in log if r["record"] == "chunk"]
    assert chunks and all(c["status"] == "accepted" for c in chunks), [c["reasons"] for c in chunks]
    assert_one_chunk_per_request(server.decoded, chunks)
    fk = FingertipKinematics()
    rows_per_chunk = int(np.ceil(HORIZON / LIBERO_HZ * BRIDGE_HZ - 1e-6))  # 5 steps of 50 ms in 20 ms rows: 13
    for req, chunk, sent in zip(server.decoded, chunks, server.replies):
        start = np.asarray(req["observation/state"][:3])
        targets = np.array(chunk["native"]["step_targets"])
        assert chunk["native"]["executed_rows"] == HORIZON and len(targets) == HORIZON
        hand = fk.positions(targets[:, :7])
        expected = start + np.cumsum(sent[:HORIZON, :3] * 0.05, axis=0)
        assert np.allclose(hand, expected, atol=1e-3), hand - expected
        applied = np.array(chunk["applied"])
        assert len(applied) == rows_per_chunk
        # Steps 2 and 4 end on bridge rows (0.1 s, 0.2 s); the last row holds step 5's target.
        assert np.allclose(applied[[4, 9, -1], :7], targets[[1, 3, 4], :7], atol=1e-9)
        assert np.allclose(applied[:, 7], 0.08)  # -1: open
    # The hand in the simulator rose as asked (the observations' state, measured).
    zs = [r["observation/state"][2] for r in server.decoded]
    assert abs(zs[-1] - zs[0] - RISE_M) < 0.005, (zs[0], zs[-1])
    run = json.loads((out / "episodes" / attempt["episode_id"] / "run.json").read_text())
    conventions = run["policy"]["openpi"]["conventions"]
    assert conventions["action_space"] == "ee_delta" and conventions["action_dim"] == 7
    assert run["policy"]["openpi"]["actions"]["frame"] == "base"
