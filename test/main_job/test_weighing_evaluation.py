"""The main job end to end: `labference launch weighing_sim.launch.py` with the real
nodes, as the launcher starts them (lab_sim and the balance in one process, every other
node in its own), over a fixed population of basic instances.

Every seed's basic instances require std_10, std_20, std_50 and std_100 in turn.
The seeds are those of the golden launches (test/golden/goldens.py), so each run
also shows that its first episodes score exactly as before the reorganisation.
`labference report` is checked on the expert's unrecorded run (conftest.expert_runs):
its terminal tables, report.json and report.html.
"""
from __future__ import annotations

import json
import math
import os
import pathlib
import re
import subprocess
import sys

import pytest
from browser import assert_self_contained_page, needs_chromium
from goldens import assert_run_matches_golden

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")
REQUIRED = ["std_10", "std_20", "std_50", "std_100"]

pytestmark = pytest.mark.slow


def launch(tmp_path: pathlib.Path, name: str, *args: str, seed: int = 0) -> tuple[pathlib.Path, list[dict]]:
    out = tmp_path / name
    proc = subprocess.run([LABFERENCE, "launch", "weighing_sim.launch.py", f"output_dir:={out}", f"seed:={seed}",
                           *args],
                          capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "selection" in proc.stdout and "completion" in proc.stdout  # the results table
    attempts = [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]
    return out, attempts


def goal_of(out: pathlib.Path, attempt: dict) -> str:
    run = json.loads((out / "episodes" / attempt["episode_id"] / "run.json").read_text())
    (standard,) = run["instance"]["goal_set"]
    return standard


def test_a_camera_rate_off_the_measurement_grid_still_measures_every_boundary(tmp_path):
    """At 15 Hz most frames fall between lab_sim's 10 ms measurements and between its 2 ms
    physics steps; measurements and frames keep their own grids, so the observation at
    each 20 ms control boundary finds that boundary's joint state and the frame of the
    last 15 Hz tick, and the expert completes as at 10 Hz."""
    out, attempts = launch(tmp_path, "camera_15", "system:=scripted_expert", "episodes:=1", "camera_rate:=15",
                           "record:=false")
    assert [a["status"] for a in attempts] == ["ok"], attempts
    assert attempts[0]["scores"]["first_choice_correct"] is True
    assert attempts[0]["scores"]["valid_complete"] is True
    receipts = [json.loads(line) for line in
                (out / "episodes" / attempts[0]["episode_id"] / "policy_actions.jsonl").read_text().splitlines()]
    seen = [(r["sim_time"], r["camera_stamps"]["front"]) for r in receipts if r.get("record") == "receipt"]
    assert len(seen) > 5
    # Each observation shows the frame of the last tick (stamps are whole nanoseconds).
    assert all(math.floor(t * 15 + 1e-6) / 15 - 1e-6 <= s <= t + 1e-6 for t, s in seen), seen


def test_display_reader_selects_the_required_standard_from_pixels(tmp_path):
    # Two episodes through the graph; all four readings are covered without ROS in
    # test/policies/test_reference_systems.py.
    out, attempts = launch(tmp_path, "display_reader", "system:=display_reader", "episodes:=2", "record:=false",
                           seed=7)
    assert [goal_of(out, a) for a in attempts] == REQUIRED[:2]
    assert [a["status"] for a in attempts] == ["ok"] * 2
    assert all(a["scores"]["first_choice_correct"] is True for a in attempts)
    assert sum(a["scores"]["valid_complete"] is True for a in attempts) >= 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["episodes"] == 2
    assert_run_matches_golden("reader_basic", out)
    assert_continuation_matches_the_graph(out, attempts[0], "display_reader")


# What the graph and a continuation must agree on exactly: every opportunity's
# trigger, legal set, first choice, its correctness and its execution, and the
# episode's completion. Times may differ by what the graph's transport adds
# (trajectory interpolation, the display's render lag), so they are not compared.
OPPORTUNITY_FIELDS = ("trigger", "evidence_version", "legal_set", "native_scorable", "first_choice",
                      "choice_correct", "execution", "first_report", "report_correct")
EPISODE_FIELDS = ("finished", "completion_class", "physically_complete", "first_choice_correct", "executed",
                  "opportunities", "identified_choices", "correct_choices", "execution", "obligations",
                  "categories", "native", "explicit")


def assert_continuation_matches_the_graph(out: pathlib.Path, attempt: dict, system: str) -> None:
    """One start through the graph (this run) and through the Oracle's matched
    continuation (oracle.continuation.run_branch from the reset checkpoint) with the
    same system and seeds: one episode loop, so identical choice, execution and
    completion records."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    from labference_ros.oracle.checkpoints import at_reset
    from labference_ros.oracle.continuation import run_branch
    from labference_ros.tasks import family

    episode = out / "episodes" / attempt["episode_id"]
    run = json.loads((episode / "run.json").read_text())
    graph = json.loads((episode / "scores.json").read_text())
    weighing = family("feedback_weighing")
    instance = weighing.instance_from_json(json.dumps(run["instance"]))
    branch = run_branch(at_reset(instance), system, budget_s=float(run["budgets"]["deadline_sim_s"]))
    assert branch.resolved, branch.reason
    alone = branch.scores
    assert [{k: o[k] for k in OPPORTUNITY_FIELDS} for o in alone["opportunity_records"]] == \
        [{k: o[k] for k in OPPORTUNITY_FIELDS} for o in graph["opportunity_records"]]
    assert {k: alone[k] for k in EPISODE_FIELDS} == {k: graph[k] for k in EPISODE_FIELDS}


def test_fixed_preference_executes_transfers_but_selects_right_only_when_its_preference_is_required(tmp_path):
    # The first three episodes require std_10, std_20 and std_50 (its preference).
    out, attempts = launch(tmp_path, "fixed", "system:=fixed_preference", "episodes:=3", "record:=false")
    assert [goal_of(out, a) for a in attempts] == REQUIRED[:3]
    for a in attempts:
        want = goal_of(out, a) == "std_50"
        s = a["scores"]
        assert s["first_choice_correct"] is want, a["episode_id"]
        assert s["executed"] is True, a["episode_id"]
        assert s["valid_complete"] is want, a["episode_id"]


def test_scripted_expert_completes_every_episode_the_same_way_twice_at_once_and_the_audit_agrees(expert_runs):
    for name, (_, output, status) in expert_runs.items():
        assert status == 0, output[-4000:]
    domains = {re.search(r"\[launch\] ROS domain (\d+) \(claimed a free one\)", output).group(1)
               for _, output, _ in expert_runs.values()}
    assert len(domains) == 2
    out1, out2 = expert_runs["expert1"][0], expert_runs["expert2"][0]
    first, second = ([json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]
                     for out in (out1, out2))
    assert len(first) == 2 and all(a["scores"]["valid_complete"] is True for a in first)
    # Same seeds, same scores: every field the referee computed, sim times included.
    assert [a["scores"] for a in first] == [a["scores"] for a in second]
    assert_run_matches_golden("expert_basic", out2)
    # run.json names the scene lab_sim compiled: one per instance, the same on a rerun.
    scenes = [[json.loads((out / "episodes" / a["episode_id"] / "run.json").read_text())["assets"]["scene_hash"]
               for a in attempts] for out, attempts in ((out1, first), (out2, second))]
    assert scenes[0] == scenes[1] and len(set(scenes[0])) == 2 and all(len(h) == 16 for h in scenes[0])
    audit = subprocess.run([LABFERENCE, "audit", str(out1)], capture_output=True, text=True, timeout=600)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert audit.stdout.count("agree") >= 2


@needs_chromium
def test_report_on_a_launcher_run_directory(expert_runs, tmp_path):
    out, output, status = expert_runs["expert2"]
    assert status == 0, output[-4000:]
    proc = subprocess.run([LABFERENCE, "report", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "== tested_system=scripted_expert / task_condition=basic" in proc.stdout
    assert "accounting     attempts 2 (PASS 2, FAIL 0, ERROR 0)" in proc.stdout
    assert f"wrote {out / 'report.html'}" in proc.stdout

    rep = json.loads((out / "report.json").read_text())
    (cell,) = rep["cells"]
    assert cell["cell"]["tested_system"] == "scripted_expert" and cell["cell"]["task_condition"] == "basic"
    assert cell["coverage"]["units"] == 2 and cell["coverage"]["missing"] == []
    assert cell["accounting"]["attempts"] == 2 and cell["accounting"]["PASS"] == 2
    assert cell["metrics"]["completion"]["n"] == 2
    # The bridge timed every call into the system; the scripted expert does not time its motion.
    rt = cell["runtime"]
    assert rt["inference"]["n"] == 2 and rt["inference"]["mean_s"] > 0
    assert rt["wall"]["mean_s"] > rt["inference"]["mean_s"]
    assert rt["motion"]["mean_s"] is None and rt["motion"]["unavailable"]

    seen = assert_self_contained_page(out / "report.html", tmp_path, min_images=3)
    assert "tested_system=scripted_expert" in seen["text"]
