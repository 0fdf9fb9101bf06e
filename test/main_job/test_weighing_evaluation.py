"""The main job end to end: `labference launch weighing_sim.launch.py` with the real
nodes, each in its own process, over a fixed population of basic instances.

Seed 0 with four episodes requires std_10, std_20, std_50 and std_100 in turn.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")
REQUIRED = ["std_10", "std_20", "std_50", "std_100"]

pytestmark = pytest.mark.slow


def launch(tmp_path: pathlib.Path, name: str, *args: str) -> tuple[pathlib.Path, list[dict]]:
    out = tmp_path / name
    proc = subprocess.run([LABFERENCE, "launch", "weighing_sim.launch.py", f"output_dir:={out}", "seed:=0", *args],
                          capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "selection" in proc.stdout and "completion" in proc.stdout  # the results table
    attempts = [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]
    return out, attempts


def goal_of(out: pathlib.Path, attempt: dict) -> str:
    run = json.loads((out / "episodes" / attempt["episode_id"] / "run.json").read_text())
    (standard,) = run["instance"]["goal_set"]
    return standard


def test_display_reader_selects_the_required_standard_from_pixels(tmp_path):
    out, attempts = launch(tmp_path, "display_reader", "system:=display_reader", "episodes:=4", "record:=false")
    assert [goal_of(out, a) for a in attempts] == REQUIRED
    assert [a["status"] for a in attempts] == ["ok"] * 4
    assert all(a["scores"]["first_choice_correct"] is True for a in attempts)
    assert sum(a["scores"]["valid_complete"] is True for a in attempts) >= 3
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["episodes"] == 4


def test_fixed_preference_executes_transfers_but_selects_right_only_when_its_preference_is_required(tmp_path):
    out, attempts = launch(tmp_path, "fixed", "system:=fixed_preference", "episodes:=4", "record:=false")
    for a in attempts:
        want = goal_of(out, a) == "std_50"
        s = a["scores"]
        assert s["first_choice_correct"] is want, a["episode_id"]
        assert s["executed"] is True, a["episode_id"]
        assert s["valid_complete"] is want, a["episode_id"]


def test_scripted_expert_completes_every_episode_the_same_way_twice_at_once_and_the_audit_agrees(tmp_path):
    # Both runs at the same time on one machine, neither told a ROS domain: each claims its own.
    env = {k: v for k, v in os.environ.items() if k != "ROS_DOMAIN_ID"}
    runs = {name: tmp_path / name for name in ("expert1", "expert2")}
    procs = {name: subprocess.Popen([LABFERENCE, "launch", "weighing_sim.launch.py", f"output_dir:={out}", "seed:=0",
                                     "system:=scripted_expert", "episodes:=3",
                                     f"record:={'true' if name == 'expert1' else 'false'}"],
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for name, out in runs.items()}
    outputs = {name: p.communicate(timeout=1500)[0] for name, p in procs.items()}
    for name, p in procs.items():
        assert p.returncode == 0, outputs[name][-4000:]
    domains = {re.search(r"\[launch\] ROS domain (\d+) \(claimed a free one\)", out).group(1)
               for out in outputs.values()}
    assert len(domains) == 2
    out1 = runs["expert1"]
    first, second = ([json.loads(line) for line in (runs[n] / "attempts.jsonl").read_text().splitlines()]
                     for n in ("expert1", "expert2"))
    assert all(a["scores"]["valid_complete"] is True for a in first)
    # Same seeds, same scores: every field the referee computed, sim times included.
    assert [a["scores"] for a in first] == [a["scores"] for a in second]
    audit = subprocess.run([LABFERENCE, "audit", str(out1)], capture_output=True, text=True, timeout=600)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert audit.stdout.count("agree") >= 3
