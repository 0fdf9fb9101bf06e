"""Placement recall's imperfect reference systems end to end (`labference launch
placement_recall_sim.launch.py`, real nodes): the mistakes real policies make are
recorded as the paper says (5.3, 7.2), and the replay audit agrees.

- dropper: the tube carried down toward its chosen hole, then set down on the table
  instead: choice credit and an execution failure (a drop); placed again, retrieved and
  delivered: a recovered completion.
- second_guess: after the occlusion its open hand first descends over a wrong hole (a
  wrong first retrieval choice), then retrieves the tube from its own: a recovered
  completion.
- hurried: its open hand descends over another hole while its placement is unfinished:
  premature advancement, then an early stop."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from test_placement_graph import LABFERENCE, episode_files, events  # noqa: E402

pytestmark = pytest.mark.slow


def launch_one(out: pathlib.Path, *args: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "ROS_DOMAIN_ID"}  # each launch claims a domain
    env.setdefault("MUJOCO_GL", "egl")
    proc = subprocess.run([LABFERENCE, "launch", "placement_recall_sim.launch.py", f"output_dir:={out}",
                           "seed:=0", "episodes:=1", "condition:=basic-same", "record:=true", *args],
                          capture_output=True, text=True, timeout=1500, env=env)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    (attempt,) = [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]
    return attempt


@pytest.mark.parametrize("system", ["dropper", "second_guess"])
def test_an_imperfect_system_recovers_and_its_records_say_how(system, tmp_path):
    out = tmp_path / system
    attempt = launch_one(out, f"system:={system}")
    assert attempt["status"] == "ok", attempt
    s, _run, episode = episode_files(out, attempt)
    records = [e for e in events(episode) if e.get("record") == "event"]
    assert s["completion_class"] == "recovered" and s["errors_outstanding"] == 0, s
    assert s["categories"]["recovery"] >= 1
    if system == "dropper":
        (failure,) = [e for e in records if e["category"] == "execution_failure"]
        assert failure["detail"]["failure"] == "drop" and failure["operation"]["type"] == "insert"
        assert s["first_choice_correct"] is True and s["executed"] is False
        assert s["retrieval"]["correct"] is True
    else:
        assert s["retrieval"]["correct"] is False and s["categories"]["incorrect_choice"] == 1
        (revision,) = [e for e in records if e["category"] == "choice_revision"]
        assert revision["operation"]["type"] == "pick" and revision["detail"]["correct"] is True
    res = subprocess.run([LABFERENCE, "audit", str(out)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and f"{attempt['episode_id']}: agree" in res.stdout, res.stdout + res.stderr


def test_hurried_goes_on_before_its_placement_is_confirmed(tmp_path):
    """hurried lets its tube go tilted and shallow in its hole, where it wedges unseated,
    and at once descends its open hand over another hole: the placement's execution
    failure (unfinished), premature advancement (4.1, 5.4), then its stop (early
    termination); no completion."""
    out = tmp_path / "hurried"
    attempt = launch_one(out, "system:=hurried")
    assert attempt["status"] == "ok", attempt
    s, _run, episode = episode_files(out, attempt)
    records = [e for e in events(episode) if e.get("record") == "event"]
    (failure,) = [e for e in records if e["category"] == "execution_failure"]
    assert failure["detail"]["failure"] == "unfinished" and failure["operation"]["type"] == "insert", failure
    (premature,) = [e for e in records if e["category"] == "premature_advancement"]
    assert premature["detail"]["reason"] == "placement_unconfirmed"
    assert s["first_choice_correct"] is True and s["executed"] is False, s
    assert s["categories"]["early_termination"] == 1, s
    assert s["completion_class"] == "none" and s["errors_outstanding"] >= 2, s
    res = subprocess.run([LABFERENCE, "audit", str(out)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and f"{attempt['episode_id']}: agree" in res.stdout, res.stdout + res.stderr
