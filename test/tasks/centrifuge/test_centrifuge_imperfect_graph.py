"""Centrifuge loading's imperfect reference systems end to end (`labference launch
centrifuge_sim.launch.py`, real nodes): the mistakes real policies make are recorded as
the paper says (4.1, 5.3, 7.2), and the replay audit agrees.

- dropper: the right slot approached, the tube set down on the table instead: choice
  credit and an execution failure (a drop); its retry seats it: a recovered completion.
- second_guess: the slot next to the right one approached first (a wrong first choice),
  then the right one: a recovered completion.
- hurried: the second tube grasped while the first placement is unfinished: premature
  advancement, then an early stop."""
from __future__ import annotations

import json
import pathlib
import subprocess

import pytest
from test_centrifuge_graph import LABFERENCE, launch, scores

pytestmark = pytest.mark.slow


def events(out: pathlib.Path, attempt: dict) -> list[dict]:
    path = out / "episodes" / attempt["episode_id"] / "events.jsonl"
    return [r for r in map(json.loads, path.read_text().splitlines()) if r.get("record") == "event"]


@pytest.mark.parametrize("system", ["dropper", "second_guess"])
def test_an_imperfect_system_recovers_and_its_records_say_how(system, tmp_path):
    out = tmp_path / system
    (attempt,) = launch(out, f"system:={system}", "condition:=basic", "seed:=0", "episodes:=1", "record:=true")
    assert attempt["status"] == "ok", attempt
    s = scores(out, attempt)
    records = events(out, attempt)
    assert s["completion_class"] == "recovered" and s["errors_outstanding"] == 0, s
    assert s["categories"]["recovery"] == 1
    if system == "dropper":
        (failure,) = [e for e in records if e["category"] == "execution_failure"]
        assert failure["detail"]["failure"] == "drop"
        assert s["first_choice_correct"] is True and s["executed"] is False
    else:
        assert s["first_choice_correct"] is False and s["categories"]["incorrect_choice"] == 1
        (revision,) = [e for e in records if e["category"] == "choice_revision"]
        assert revision["detail"]["correct"] is True
    res = subprocess.run([LABFERENCE, "audit", str(out)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and f"{attempt['episode_id']}: agree" in res.stdout, res.stdout + res.stderr


def test_hurried_takes_the_second_tube_while_the_first_is_unfinished(tmp_path):
    """hurried lets its first tube go leaning the wrong way above its slot, where it cannot
    slide in, and grasps the second at once: the first placement's execution failure
    (unfinished), premature advancement (4.1), then its stop before the task held (early
    termination); no completion."""
    out = tmp_path / "hurried"
    (attempt,) = launch(out, "system:=hurried", "condition:=extended", "seed:=0", "episodes:=1", "record:=true")
    assert attempt["status"] == "ok", attempt
    s = scores(out, attempt)
    records = events(out, attempt)
    failures = [e for e in records if e["category"] == "execution_failure"]
    assert failures and failures[0]["detail"]["failure"] == "unfinished", failures
    (premature, *_) = [e for e in records if e["category"] == "premature_advancement"]
    first_tube = failures[0]["object"]
    assert premature["object"] != first_tube and first_tube in premature["detail"]["reason"], premature
    assert s["categories"]["premature_advancement"] >= 1 and s["categories"]["early_termination"] == 1, s
    assert s["completion_class"] == "none" and s["errors_outstanding"] > 0, s
    res = subprocess.run([LABFERENCE, "audit", str(out)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and f"{attempt['episode_id']}: agree" in res.stdout, res.stdout + res.stderr
