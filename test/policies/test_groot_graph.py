"""system:=groot in the real graph (`labference launch`) against a GR00T
stand-in built from the documented wire format (pyzmq + msgpack, .npy
arrays): ping, modality config check, reset, then get_action per chunk; the
rows run as 15 Hz steps, 8 per request, with no rejected chunk; a server
whose modality config differs from the mapping is refused before the
episode with one line naming both sides (exit 3)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from fake_groot import FakeGrootServer
from graph_checks import FAST, assert_one_chunk_per_request, assert_records_parse, console, episode_lines, launch

DROID_HZ, BRIDGE_HZ, HORIZON = 15.0, 50.0, 8
PARAMS = {"profile": "droid",
          "video": {"exterior_image_1_left": "front|display", "wrist_image_left": "wrist"},
          "state": {"joint_position": ["joint_position"], "gripper_position": ["gripper_closed_1"],
                    "timestamp": ["sim_time"]}}


@pytest.mark.slow
def test_groot_server_runs_an_episode_with_the_declared_semantics(tmp_path):
    out = tmp_path / "run"
    with FakeGrootServer() as server:
        proc = launch(out, "system:=groot", "episodes:=1", "deadline_s:=8", *FAST,
                      "system_params:=" + json.dumps({**PARAMS, "port": server.port}))
    text = console(proc)
    assert proc.returncode == 0, text[-4000:]
    (attempt,) = assert_records_parse(out)
    assert attempt["status"] == "ok", attempt.get("errors")
    assert server.endpoints[:3] == ["ping", "get_modality_config", "reset"]
    assert set(server.endpoints[3:]) == {"get_action"}
    obs = server.observations[0]
    assert obs["video"]["wrist_image_left"].dtype == np.uint8 and obs["video"]["wrist_image_left"].ndim == 5
    assert obs["state"]["joint_position"].dtype == np.float32 and obs["state"]["joint_position"].shape == (1, 1, 7)
    assert isinstance(obs["language"]["annotation.language.language_instruction"][0][0], str)

    ep = out / "episodes" / attempt["episode_id"]
    log = [json.loads(x) for x in (ep / "policy_actions.jsonl").read_text().splitlines()]
    chunks = [r for r in log if r["record"] == "chunk"]
    assert_one_chunk_per_request(server.replies, chunks)
    assert all(c["status"] == "accepted" for c in chunks)
    rows_per_chunk = int(np.ceil(HORIZON / DROID_HZ * BRIDGE_HZ - 1e-6))
    for chunk, sent in zip(chunks, server.replies):
        applied = np.array(chunk["applied"])
        assert chunk["native"]["executed_rows"] == HORIZON and len(applied) == rows_per_chunk
        # Steps 3 and 6 end on bridge rows (0.2 s, 0.4 s); the last row holds step 8's target (float32 on the wire).
        assert np.allclose(applied[[9, 19, -1], :7], sent[[2, 5, 7], :7], atol=1e-6)
        assert np.allclose(applied[0, 7], 0.08 * (1.0 - sent[0, 7]), atol=1e-6)
    run = json.loads((ep / "run.json").read_text())
    groot = run["policy"]["groot"]
    assert groot["modality_config"]["action"]["modality_keys"] == ["joint_position", "gripper_position"]
    assert groot["conventions"]["control_rate_hz"] == DROID_HZ and groot["conventions"]["open_loop_horizon"] == 8
    latency = run["usage"]["policy_latency"]
    # Every answered request is charged, the one in flight at the end too.
    assert latency["requests"] == len(server.replies) and latency["server_timing"]["inference_ms"]["mean"] == 3.0


@pytest.mark.slow
def test_a_different_modality_config_is_refused_before_the_episode(tmp_path):
    out = tmp_path / "run"
    with FakeGrootServer(video_keys=["ego_view"]) as server:
        proc = launch(out, "system:=groot", "episodes:=1", *FAST,
                      "system_params:=" + json.dumps({**PARAMS, "port": server.port}))
    text = console(proc)
    assert proc.returncode == 3, text[-4000:]
    assert "Traceback" not in text
    (line,) = episode_lines(proc)
    assert ("convention mismatch with GR00T profile 'droid': video keys: server ['ego_view'], "
            "profile ['exterior_image_1_left', 'wrist_image_left'] [convention_mismatch]") in line, line
    assert "get_action" not in server.endpoints and "reset" not in server.endpoints
