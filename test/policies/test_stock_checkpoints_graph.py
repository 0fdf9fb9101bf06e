"""Stock checkpoints through the whole graph (`labference launch`): a server
whose first reply has another action dimension than the profile's ends its
episode at that reply as an evaluation-validity error naming the rejection and
its likely cause, and the run exits 3, never a normal run with errors 0 (the
limit on consecutive rejections of other kinds: test/core/test_rejections.py)."""
from __future__ import annotations

import json

import pytest

from fake_libero import FakeLiberoServer
from graph_checks import FAST, assert_records_parse, console, episode_lines, launch

MAX_REJECTED_S = 0.4  # 20 refused chunks at 50 Hz, were the mismatch not structural


@pytest.mark.slow
def test_every_chunk_rejected_is_an_invalid_episode_and_exit_3(tmp_path):
    out = tmp_path / "run"
    with FakeLiberoServer() as server:
        params = {"port": server.port, "profile": "libero", "max_rejected_s": MAX_REJECTED_S}
        proc = launch(out, "system:=openpi", "episodes:=1", *FAST, "system_params:=" + json.dumps(params))
    text = console(proc)
    assert proc.returncode == 3, text[-4000:]
    assert "Traceback" not in text
    (line,) = episode_lines(proc)
    assert "first reply's actions rejected" in line and "dimension 7 != 8" in line, line
    assert "likely cause" in line and "end-effector" in line and line.endswith("[policy_actions_rejected]"), line
    (attempt,) = assert_records_parse(out)
    assert attempt["error_kind"] == "policy_actions_rejected"
    assert len(server.decoded) == 1  # asked once, then stopped: no later reply can fit
    log = [json.loads(x) for x in (out / "episodes" / attempt["episode_id"] / "policy_actions.jsonl")
           .read_text().splitlines()]
    chunks = [r for r in log if r["record"] == "chunk"]
    assert len(chunks) == 1 and {c["status"] for c in chunks} == {"rejected"}
    assert log[-1]["record"] == "end" and log[-1]["state"] == "error"
