"""Full-rollout Oracle support in the real graph (`labference launch ... support:=`):
the oracle node binds State support to each opportunity the referee opens, the
policy bridge hands it to the system only after the referee's scope check, and
the same misreader that fails alone chooses right with it. The replay audit
re-scores the supported run, intervention receipts included, from its bag."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from labference_ros.tasks.weighing.instances import generate, write_instance_list

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")
# The sample reads 150 g; the misreader decodes "150" as "160" and so misjudges the residual.
INSTANCE = generate("basic", 4, task_seed=1, layout_seed=100, policy_seed=0)[0]


def _launch(tmp_path, name, *args, instance=INSTANCE):
    instances = tmp_path / f"{name}-instances.json"
    write_instance_list(instances, [instance])
    out = tmp_path / name
    proc = subprocess.run([LABFERENCE, "launch", "weighing_sim.launch.py", f"instances:={instances}",
                           f"output_dir:={out}", *args], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (ep,) = (out / "episodes").iterdir()
    return ep


def _jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_state_support_fixes_the_misreaders_choice_in_the_graph_and_the_audit_agrees(tmp_path):
    assert INSTANCE.sample_mass_g == 150.0 and INSTANCE.goal_set == ("std_10",)
    base = _launch(tmp_path, "base", "system:=misreader", "record:=false")
    sup = _launch(tmp_path, "supported", "system:=misreader", "support:=replace:state", "record:=true")

    base_scores = json.loads((base / "scores.json").read_text())
    assert base_scores["first_choice_correct"] is not True and base_scores["valid_complete"] is False
    assert base_scores["status"] == "final"  # it stopped itself: a measured FAIL, not an ERROR
    assert json.loads((base / "run.json").read_text())["intervention"] == {"mode": "none"}

    scores = json.loads((sup / "scores.json").read_text())
    assert scores["first_choice_correct"] is True and scores["valid_complete"] is True
    run = json.loads((sup / "run.json").read_text())
    assert run["intervention"]["mode"] == "replace" and run["intervention"]["site"] == "state"
    assert run["intervention"]["protocol"] == "full_rollout"
    assert run["intervention"]["compatibility"] == {"replace:state": "compatible"}

    # The referee scope-checked what reached the system; the payload is the displayed reading only.
    receipts = [r for r in _jsonl(sup / "observations.jsonl") if r.get("kind") == "intervention"]
    assert receipts and all(r["status"] == "delivered" and r["site"] == "state" for r in receipts)
    supplied = [r for r in _jsonl(sup / "policy_actions.jsonl") if r.get("record") == "support"
                and r["status"] == "delivered"]
    assert supplied[0]["payload"] == {"displayed_g": 150.0, "stable": True}
    # Replace keeps the system's own output beside the substituted one.
    outcome = next(r for r in _jsonl(sup / "policy_actions.jsonl") if r.get("record") == "support_outcome")
    assert outcome["original_output"]["displayed_g"] == 160.0
    assert outcome["substituted_output"] == {"displayed_g": 150.0, "stable": True}

    audit = subprocess.run([LABFERENCE, "audit", str(sup)], capture_output=True, text=True, timeout=600)
    assert audit.returncode == 0, audit.stdout[-3000:] + audit.stderr[-2000:]


@pytest.mark.slow
def test_geometry_assist_over_topics_lets_the_mislocator_complete_its_transfer(tmp_path):
    """The mislocator localizes every standard 3.5 cm wide and its grasp misses; with
    every standard's frame supplied at each opportunity it snaps to the right one."""
    instance = generate("basic", 4, task_seed=1, layout_seed=100, policy_seed=0)[2]  # requires std_50
    base = _launch(tmp_path, "base", "system:=mislocator", "record:=false", instance=instance)
    sup = _launch(tmp_path, "assisted", "system:=mislocator", "support:=assist:geometry", "record:=false",
                  instance=instance)
    base_scores = json.loads((base / "scores.json").read_text())
    assert base_scores["executed"] is not True and base_scores["physically_complete"] is False
    scores = json.loads((sup / "scores.json").read_text())
    assert scores["first_choice_correct"] is True and scores["executed"] is True
    assert scores["physically_complete"] is True
    supplied = [r for r in _jsonl(sup / "policy_actions.jsonl") if r.get("record") == "support"
                and r["status"] == "delivered"]
    frames = supplied[0]["payload"]["candidates"]
    assert sorted(f["object"] for f in frames) == ["std_10", "std_100", "std_20", "std_50"]
    assert all(set(f) == {"object", "position", "axis"} for f in frames)  # frames only: no mass, no goal
    # The frame it localized its target with is the supplied one, not its own.
    (outcome,) = [r for r in _jsonl(sup / "policy_actions.jsonl") if r.get("record") == "support_outcome"
                  and r["original_output"] is not None]  # one localization: the transfer of std_50
    assert outcome["original_output"]["object"] == "std_50" and outcome["first_subsequent_choice"]["object"] == "std_50"
    latest = next(r for r in supplied if r["intervention_id"] == outcome["intervention_id"])
    assert outcome["substituted_output"] == next(f for f in latest["payload"]["candidates"] if f["object"] == "std_50")
    assert outcome["original_output"]["position"] != outcome["substituted_output"]["position"]
