"""The golden launches (test/golden/weighing/launches.json, captured on the code
before the task-module reorganisation) and the check that a run reproduces them.

A golden launch is checked by whichever graph test already launches a superset
of it (same system, condition and seed, at least as many episodes): instance i
of a seed does not depend on the episode count, so its scores.json must equal
the golden one. GOLDEN_CHECKS says where each launch is checked."""
from __future__ import annotations

import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent / "weighing"
LAUNCHES = json.loads((HERE / "launches.json").read_text())
# Written at run time, not computed by the referee from its inputs.
VOLATILE = ("wall_time_s", "written_at")
TEST_ROOT = pathlib.Path(__file__).resolve().parents[1]
GOLDEN_CHECKS = {
    "expert_basic": TEST_ROOT / "main_job" / "test_weighing_evaluation.py",
    "preference_basic": TEST_ROOT / "golden" / "test_golden.py",
    "reader_basic": TEST_ROOT / "main_job" / "test_weighing_evaluation.py",
    "expert_extended": TEST_ROOT / "golden" / "test_golden.py",
}


def canonical(records) -> str:
    return json.dumps(records, sort_keys=True)


def without_volatile(scores: dict) -> dict:
    """A scores.json without its run-time fields."""
    return {k: v for k, v in scores.items() if k not in VOLATILE}


def golden_scores(name: str) -> dict[str, dict]:
    """episode directory name -> its golden scores.json, without run-time fields."""
    return {episode: without_volatile(scores) for episode, scores in LAUNCHES[name]["scores"].items()}


def assert_run_matches_golden(name: str, run_dir: pathlib.Path) -> None:
    """Every episode of golden launch `name` is in run_dir with identical scores."""
    for episode, want in golden_scores(name).items():
        path = run_dir / "episodes" / episode / "scores.json"
        assert path.exists(), f"{name}: {episode} is not in {run_dir}"
        got = without_volatile(json.loads(path.read_text()))
        assert canonical(got) == canonical(want), f"{name}/{episode}: scores.json differs from the golden one"
