"""system:=openpi with the droid profile in the real graph (`labference
launch`), against the DROID-like stand-in server: velocity chunks and a
normalised gripper complete a weighing episode with no rejected chunk, the
applied targets are the integrated velocities, run.json holds the profile,
its ActionSpec and the server's metadata, and the API key reaches the
server but no record or log."""
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

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")
INSTANCE = generate("basic", 3, task_seed=1, layout_seed=100, policy_seed=0)[2]
KEY_VAR, KEY = "LABF_TEST_DROID_KEY", "sk-droid-5e0c1b7a"
RATE_HZ = 50.0
# The scripted plans move some joints at up to 6 rad/s and the servos lag their
# targets by ~0.1 s, which DROID's 3 rad/s unit cannot express without clipping
# most chunks (the grasp then fails): server and profile agree on a larger unit,
# a declared and recorded profile option.
SCALE_RAD_S = 10.0
PARAMS = {"profile": "droid", "resize": None, "api_key_env": KEY_VAR, "actions": {"velocity_scale": SCALE_RAD_S},
          "images": {"observation/exterior_image_1_left": "front|display", "observation/wrist_image_left": "wrist"},
          "extra": {"observation/timestamp": "sim_time"}}


@pytest.mark.slow
def test_droid_server_completes_a_weighing_episode(tmp_path):
    instances = tmp_path / "instances.json"
    write_instance_list(instances, [INSTANCE])
    out = tmp_path / "run"
    with FakeDroidServer(rate_hz=RATE_HZ, chunk_len=50, api_key=KEY, velocity_scale_rad_s=SCALE_RAD_S) as server:
        params = {**PARAMS, "port": server.port}
        proc = subprocess.run(
            [LABFERENCE, "launch", "weighing_sim.launch.py", "system:=openpi", "system_params:=" + json.dumps(params),
             f"instances:={instances}", "record:=false", f"output_dir:={out}"],
            capture_output=True, text=True, timeout=900, env={**os.environ, KEY_VAR: KEY})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (attempt,) = [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]
    assert attempt["status"] == "ok", attempt.get("errors")
    s = attempt["scores"]
    assert s["first_choice_correct"] is True and s["valid_complete"] is True

    ep = out / "episodes" / attempt["episode_id"]
    chunks = [r for r in map(json.loads, (ep / "policy_actions.jsonl").read_text().splitlines())
              if r["record"] == "chunk"]
    # No chunk rejected or stale; "clipped" marks a velocity beyond +-1 unit, clipped before integration.
    assert chunks and all(c["status"] in ("accepted", "clipped") for c in chunks), [c["reasons"] for c in chunks]
    # One request per chunk, in order: the state each chunk was integrated from is what the server received.
    assert len(server.decoded) == len(chunks)
    for req, chunk, sent in zip(server.decoded, chunks, server.replies):
        native = np.array(chunk["native"]["requested"])
        assert np.array_equal(native, sent)  # requested as the server sent it
        q = req["observation/joint_position"]
        expected = q + np.cumsum(np.clip(native[:, :7], -1.0, 1.0) * SCALE_RAD_S / RATE_HZ, axis=0)
        applied = np.array(chunk["applied"])
        assert np.allclose(applied[:, :7], expected, atol=1e-9)
        assert np.allclose(applied[:, 7], 0.08 * (1.0 - native[:, 7]), atol=1e-12)
    assert any(np.abs(np.array(c["native"]["requested"])[:, :7]).max() > 0.05 for c in chunks)  # it moved

    run = json.loads((ep / "run.json").read_text())
    pi = run["policy"]["openpi"]
    assert pi["name"] == "droid" and pi["server_metadata"] == server.metadata
    native_spec = pi["actions"]["native_action_spec"]
    assert native_spec["mode"] == "velocity" and native_spec["gripper"]["kind"] == "normalised_closed_1"
    assert native_spec["control_frequency_hz"] == RATE_HZ and pi["actions"]["velocity_scale_rad_s"] == SCALE_RAD_S
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
