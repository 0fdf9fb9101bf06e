"""system:=openpi with the droid profile in the real graph (`labference
launch`), against the DROID-like stand-in server: velocity chunks and a
normalised gripper run with no rejected chunk and the step semantics of
DROID's robot (one row per 15 Hz step, at most 0.2 rad per joint per step
with an over-range row scaled as a whole, 8 rows open loop per request),
run.json holds the profile, its conventions and the server's metadata, and
the API key reaches the server but no record or log."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from labference_ros.tasks.weighing.contract import weighing_basic
from labference_ros.tasks.weighing.instances import generate, write_instance_list
from labference_ros.core.observation import EvaluatorSecrets, find_leaks
from fake_droid import FakeDroidServer
from graph_checks import assert_one_chunk_per_request

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")
INSTANCE = generate("basic", 3, task_seed=1, layout_seed=100, policy_seed=0)[2]
KEY_VAR, KEY = "LABF_TEST_DROID_KEY", "sk-droid-5e0c1b7a"
DROID_HZ, BRIDGE_HZ, HORIZON, MAX_STEP_RAD = 15.0, 50.0, 8, 0.2
CHUNK_LEN = 10  # the server's rows per reply; 8 of them run
DEADLINE_S = 12.0
PARAMS = {"profile": "droid", "resize": None, "api_key_env": KEY_VAR,
          "images": {"observation/exterior_image_1_left": "front|display", "observation/wrist_image_left": "wrist"},
          "extra": {"observation/timestamp": "sim_time"}}


def droid_step_targets(q, native):
    """What DROID's robot makes of the executed rows (droid RobotIKSolver, this
    test's own arithmetic): each row scaled as a whole to |v| <= 1, 0.2 rad per unit."""
    v = native[:HORIZON, :7]
    peak = np.maximum(np.abs(v).max(axis=1, keepdims=True), 1.0)
    return q + np.cumsum(v / peak * MAX_STEP_RAD, axis=0)


@pytest.mark.slow
def test_droid_server_runs_with_droids_step_semantics(tmp_path):
    instances = tmp_path / "instances.json"
    write_instance_list(instances, [INSTANCE])
    out = tmp_path / "run"
    with FakeDroidServer(rate_hz=DROID_HZ, chunk_len=CHUNK_LEN, api_key=KEY) as server:
        params = {**PARAMS, "port": server.port}
        proc = subprocess.run(
            [LABFERENCE, "launch", "weighing_sim.launch.py", "system:=openpi", "system_params:=" + json.dumps(params),
             f"instances:={instances}", "record:=false", f"output_dir:={out}", f"deadline_s:={DEADLINE_S}"],
            capture_output=True, text=True, timeout=900, env={**os.environ, KEY_VAR: KEY})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (attempt,) = [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]
    assert attempt["status"] == "ok", attempt.get("errors")

    ep = out / "episodes" / attempt["episode_id"]
    log = [json.loads(line) for line in (ep / "policy_actions.jsonl").read_text().splitlines()]
    chunks = [r for r in log if r["record"] == "chunk"]
    assert chunks and all(c["status"] == "accepted" for c in chunks), [c["reasons"] for c in chunks]
    # One request per chunk, in order: the state each chunk was integrated from is what the server received.
    assert_one_chunk_per_request(server.decoded, chunks)
    rows_per_chunk = int(np.ceil(HORIZON / DROID_HZ * BRIDGE_HZ - 1e-6))  # 8 steps of 1/15 s in 20 ms rows: 27
    scaled = 0
    for req, chunk, sent in zip(server.decoded, chunks, server.replies):
        native = np.array(chunk["native"]["requested"])
        assert np.array_equal(native, sent)  # requested as the server sent it
        assert len(sent) == CHUNK_LEN and chunk["native"]["executed_rows"] == HORIZON  # 8 of 10 run
        scaled += chunk["native"]["scaled_rows"]
        q = req["observation/joint_position"]
        targets = droid_step_targets(q, native)
        applied = np.array(chunk["applied"])
        assert len(applied) == rows_per_chunk
        # Steps 3 and 6 end on a bridge row (0.2 s, 0.4 s); the last row holds step 8's target.
        assert np.allclose(applied[[9, 19, -1], :7], targets[[2, 5, 7]], atol=1e-9)
        # DROID's 0.2 rad per joint per 1/15 s step, as the arm got it: interpolated, at most
        # 0.06 rad per 20 ms row (the applied rows, not this test's own arithmetic).
        row_steps = np.diff(np.vstack([q, applied[:, :7]]), axis=0)
        assert np.abs(row_steps).max() <= MAX_STEP_RAD * DROID_HZ / BRIDGE_HZ + 1e-9
        # The gripper: closed above 0.5 (openpi's DROID example), held for the step.
        closed = native[:HORIZON, 7] > 0.5
        assert set(np.round(applied[:, 7], 12)) <= {0.0, 0.08}
        assert applied[0, 7] == (0.0 if closed[0] else 0.08)
    assert any(np.abs(np.array(c["native"]["requested"])[:, :7]).max() > 0.05 for c in chunks)  # it moved
    # Requests per sim second as DROID's robot gives them: one per 8 steps (0.54 s in 20 ms rows), not one per
    # 0.2 s as when each row ran one 20 ms interval.
    end_t = log[-1]["t"]
    period = rows_per_chunk / BRIDGE_HZ
    # The episode ran to its deadline: the bridge's last sim time is within the chunk under way then.
    assert log[-1]["record"] == "end" and end_t >= DEADLINE_S - period
    assert abs(len(chunks) - end_t / period) <= 1.0, (len(chunks), end_t)
    assert 1.5 <= len(chunks) / end_t <= 2.0

    run = json.loads((ep / "run.json").read_text())
    pi = run["policy"]["openpi"]
    assert pi["name"] == "droid" and pi["server_metadata"] == server.metadata
    native_spec = pi["actions"]["native_action_spec"]
    assert native_spec["mode"] == "velocity" and native_spec["gripper"]["kind"] == "normalised_closed_1"
    assert native_spec["control_frequency_hz"] == DROID_HZ and pi["actions"]["max_step_rad"] == pytest.approx(0.2)
    conventions = pi["conventions"]
    assert conventions["action_space"] == "joint_velocity" and conventions["control_rate_hz"] == DROID_HZ
    assert conventions["open_loop_horizon"] == HORIZON and conventions["gripper"] == "normalised_closed_1"
    assert pi["request"]["images"][0]["cameras"] == ["front", "display"]
    assert pi["request"]["images"][0]["composite"] == "side_by_side"
    assert run["policy"]["params"]["api_key_env"] == KEY_VAR

    # The key reached the server and nothing the run wrote or printed.
    assert set(server.authorization) == {f"Api-Key {KEY}"}
    assert KEY not in proc.stdout + proc.stderr
    for path in out.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    # No evaluator value in any request that crossed the wire.
    secrets = EvaluatorSecrets.of_instance(INSTANCE, weighing_basic().diagnostics.hidden_keys,
                                           legal=[f"add({s}->pan)" for s in INSTANCE.goal_set])
    for body, req in zip(server.requests, server.decoded):
        pixels = [v.tobytes() for v in req.values() if isinstance(v, np.ndarray) and v.dtype == np.uint8]
        assert find_leaks(body, secrets, INSTANCE.public_instruction(), pixels) == []
