"""labference agreement on rehearsal run directories: each episode's scores.json against
its shadow/scores.json; a difference is named and the exit status says so."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from labference_ros.reporting.agreement import compare_run

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")


def _scores(choice: str, complete: bool = True, trigger: str = "initial_readiness", categories: dict | None = None
            ) -> dict:
    opportunity = {"opportunity_id": 1, "trigger": trigger, "legal_set": [{"type": "add", "object": "std_10"}],
                   "first_choice": {"type": "add", "object": choice}, "choice_correct": choice == "std_10",
                   "execution": "confirmed", "first_report": None, "report_correct": None}
    return {"first_choice_correct": choice == "std_10", "executed": True, "physically_complete": complete,
            "valid_complete": complete, "completion_class": "clean" if complete else "none",
            "obligations": {}, "supported_standards": [], "violations": [], "opportunity_records": [opportunity],
            "categories": categories or {"incorrect_choice": 0 if choice == "std_10" else 1, "execution_failure": 0}}


def _event(category: str, reason: str, t: float = 1.0) -> dict:
    return {"record": "event", "category": category, "t": t, "object": "", "detail": {"reason": reason}}


START = {"record": "event", "category": "episode_start", "t": 0.0, "detail": {}}


def _episode(run, name, sensor, privileged, sensor_events=(START,), privileged_events=(START,)):
    d = run / "episodes" / name
    (d / "shadow").mkdir(parents=True)
    (d / "scores.json").write_text(json.dumps(sensor))
    (d / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in sensor_events))
    if privileged is not None:
        (d / "shadow" / "scores.json").write_text(json.dumps(privileged))
        (d / "shadow" / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in privileged_events))


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


def test_validity_and_safety_events_and_category_counts_are_compared(tmp_path):
    run = tmp_path / "run"
    overload = _event("safety_violation", "overload")
    timeout = _event("validity", "mt_sics:/tmp/balance: no reply to SI within 1 s")
    # Same events at other times, and an episode_start only one side logged twice: agree.
    _episode(run, "0000_extended", _scores("std_10"), _scores("std_10"),
             sensor_events=(START, _event("safety_violation", "overload", 5.0)),
             privileged_events=(START, START, _event("safety_violation", "overload", 4.9)))
    # The shadow saw an overload the sensor-only referee did not.
    _episode(run, "0001_extended", _scores("std_10"), _scores("std_10"), privileged_events=(START, overload))
    # A validity event only the sensor side saw (its driver timed out).
    _episode(run, "0002_extended", _scores("std_10"), _scores("std_10"), sensor_events=(START, timeout))
    # The same validity onset once on one side and twice on the other.
    _episode(run, "0003_extended", _scores("std_10"), _scores("std_10"),
             sensor_events=(START, timeout), privileged_events=(START, timeout, timeout))
    # Same opportunities and fields, one more execution failure counted by the shadow.
    _episode(run, "0004_extended", _scores("std_10"),
             _scores("std_10", categories={"incorrect_choice": 0, "execution_failure": 1}))
    results = compare_run(run)
    assert [e.agrees for e in results] == [True, False, False, False, False], [e.differences for e in results]
    assert results[1].differences == ["safety_violation event 'overload': privileged 1, sensor 0"]
    assert results[2].differences == [f"validity event {timeout['detail']['reason']!r}: privileged 0, sensor 1"]
    assert results[3].differences == [f"validity event {timeout['detail']['reason']!r}: privileged 2, sensor 1"]
    assert results[4].differences == ["category execution_failure: privileged 1, sensor 0"]
    done = subprocess.run([LABFERENCE, "agreement", "--json", str(run)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert [e["agrees"] for e in json.loads(done.stdout)] == [True, False, False, False, False]


def test_an_episode_without_events_is_not_compared(tmp_path):
    run = tmp_path / "run"
    _episode(run, "0000_basic", _scores("std_10"), _scores("std_10"))
    (run / "episodes" / "0000_basic" / "shadow" / "events.jsonl").unlink()
    (result,) = compare_run(run)
    assert not result.agrees and result.problem == "no shadow/events.jsonl"


def test_the_sensing_paths_own_uncertainty_and_the_shadows_start_up_are_said_not_compared(tmp_path):
    run = tmp_path / "run"
    hidden = _event("validity", "estimator: marker of std_10 not seen for over 0.35 s; support unknown", 7.1)
    start_up = [{**START, "t": 0.09}, _event("validity", "no_reading", 0.09)]
    _episode(run, "0000_extended", _scores("std_10"), _scores("std_10"), sensor_events=(START, hidden, hidden),
             privileged_events=start_up)
    # The same no_reading later in the episode is a difference.
    _episode(run, "0001_extended", _scores("std_10"), _scores("std_10"),
             privileged_events=(START, _event("validity", "no_reading", 3.0)))
    first, second = compare_run(run)
    assert first.agrees, first.differences
    assert first.notes == ["sensor-only uncertainty, 2 validity events: " + hidden["detail"]["reason"]]
    assert second.differences == ["validity event 'no_reading': privileged 1, sensor 0"]
    done = subprocess.run([LABFERENCE, "agreement", str(run)], capture_output=True, text=True, timeout=120)
    assert "(sensor-only uncertainty, 2 validity events: estimator: marker of std_10" in done.stdout


def test_the_estimators_reasons_are_the_ones_agreement_sets_apart():
    from labference_ros.core.agreement import SENSING_UNCERTAINTY
    from labference_ros.tasks.weighing.sensor_estimator import ESTIMATOR

    assert f"{ESTIMATOR}:" in SENSING_UNCERTAINTY
