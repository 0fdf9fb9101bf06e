"""labference agreement on rehearsal run directories: each episode's scores.json against
its shadow/scores.json; a difference is named and the exit status says so."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from labference_ros.reporting.agreement import compare_run

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")


def _scores(choice: str, complete: bool = True, trigger: str = "initial_readiness") -> dict:
    opportunity = {"opportunity_id": 1, "trigger": trigger, "legal_set": [{"type": "add", "object": "std_10"}],
                   "first_choice": {"type": "add", "object": choice}, "choice_correct": choice == "std_10",
                   "execution": "confirmed", "first_report": None, "report_correct": None}
    return {"first_choice_correct": choice == "std_10", "executed": True, "physically_complete": complete,
            "valid_complete": complete, "completion_class": "clean" if complete else "none",
            "obligations": {}, "supported_standards": [], "violations": [], "opportunity_records": [opportunity]}


def _episode(run, name, sensor, privileged):
    d = run / "episodes" / name
    (d / "shadow").mkdir(parents=True)
    (d / "scores.json").write_text(json.dumps(sensor))
    if privileged is not None:
        (d / "shadow" / "scores.json").write_text(json.dumps(privileged))


def test_agreeing_and_differing_episodes_are_told_apart(tmp_path):
    run = tmp_path / "run"
    _episode(run, "0000_basic", _scores("std_10"), _scores("std_10", trigger="confirmed_change"))
    _episode(run, "0001_basic", _scores("std_20"), _scores("std_10"))
    _episode(run, "0002_basic", _scores("std_10"), None)
    results = compare_run(run)
    assert [e.agrees for e in results] == [True, False, False]  # the first trigger is start-up timing
    assert any("first_choice" in d for d in results[1].differences)
    assert results[2].problem == "no shadow/scores.json"
    done = subprocess.run([LABFERENCE, "agreement", str(run)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "agrees with the shadow referee in 1 of 3 episodes" in done.stdout
    assert "0001_basic: opportunity 1 first_choice" in done.stdout


def test_a_run_without_shadow_records_is_refused_by_name(tmp_path):
    run = tmp_path / "run"
    (run / "episodes" / "0000_basic").mkdir(parents=True)
    (run / "episodes" / "0000_basic" / "scores.json").write_text(json.dumps(_scores("std_10")))
    done = subprocess.run([LABFERENCE, "agreement", str(run)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "no episode has shadow referee records" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    every = subprocess.run([LABFERENCE, "agreement", str(run / "episodes" / "0000_basic")], capture_output=True,
                           text=True, timeout=120)
    assert every.returncode == 1 and "not a run directory" in every.stderr, every.stderr


def test_the_agreement_count_carries_its_wilson_interval(tmp_path):
    from labference_ros.reporting.agreement import format_agreement

    run = tmp_path / "run"
    for k in range(3):
        _episode(run, f"000{k}_basic", _scores("std_10"), _scores("std_10"))
    assert format_agreement(compare_run(run)).endswith(
        "agrees with the shadow referee in 3 of 3 episodes (95% Wilson interval 43.9%..100.0%)")
