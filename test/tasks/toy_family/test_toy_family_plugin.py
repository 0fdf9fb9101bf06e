"""A task family added from this folder alone (LABFERENCE_TASKS=toy_shuttle=<this folder>):
the registry, the tested-system registry, the graph lookup and `labference launch` find it
in a fresh process, as every node of a graph would; one graph episode (every node in its own
process) and one matched continuation (`diagnose-oracle`) run and score it, with no project
file changed."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

FOLDER = pathlib.Path(__file__).resolve().parent
LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")


def _env(value: str) -> dict:
    # The folder is found through the variable alone; each launch claims its own ROS domain.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ROS_DOMAIN_ID")}
    return {**env, "LABFERENCE_TASKS": value, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}


def _scores(folder: pathlib.Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.rglob("scores.json"))]


def test_the_registries_and_the_graph_lookup_find_the_toy_family():
    probe = ("import json\n"
             "from labference_ros import tasks, policies\n"
             "from labference_ros.graphs import graph_for\n"
             "fam = tasks.family('toy_shuttle')\n"
             "graph = graph_for('toy_sim.launch.py')\n"
             "inst = fam.generate('basic', 2, 7, 7, 0)\n"
             "print(json.dumps({'available': tasks.available(), 'conditions': list(fam.conditions),\n"
             "  'graph_task': graph.task, 'nodes': [n.name for n in graph.nodes],\n"
             "  'systems': policies.available('toy_shuttle'),\n"
             "  'system': policies.system_class('toy_expert', 'toy_shuttle').__module__,\n"
             "  'contract': fam.contract_for('basic').contract_id,\n"
             "  'of_instance': tasks.family_of(inst[0]).name,\n"
             "  'round_trip': fam.instance_from_json(inst[1].to_json()) == inst[1]}))\n")
    proc = subprocess.run([sys.executable, "-c", probe], env=_env(f"toy_shuttle={FOLDER}"), cwd="/",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert "toy_shuttle" in found["available"] and "feedback_weighing" in found["available"]
    assert found["conditions"] == ["basic"]
    assert found["graph_task"] == "toy_shuttle"
    assert "balance" not in found["nodes"] and {"lab_sim", "referee", "policy_bridge"} <= set(found["nodes"])
    assert "toy_expert" in found["systems"]
    assert found["system"] == "toy_family.systems"
    assert found["contract"] == "toy_shuttle.basic@0.1.0"
    assert found["of_instance"] == "toy_shuttle"
    assert found["round_trip"] is True


def test_labference_launch_lists_the_toy_graphs_arguments():
    proc = subprocess.run([LABFERENCE, "launch", "toy_sim.launch.py", "-s"], env=_env(f"toy_shuttle={FOLDER}"),
                          cwd="/", capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "system" in proc.stdout and "episodes" in proc.stdout


def test_without_the_variable_the_toy_family_is_unknown():
    proc = subprocess.run([LABFERENCE, "launch", "toy_sim.launch.py", "-s"], env=_env(""), cwd="/",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "no graph for 'toy_sim.launch.py'" in proc.stderr


def test_a_malformed_entry_is_one_clear_line():
    proc = subprocess.run([LABFERENCE, "launch", "toy_sim.launch.py", "-s"], env=_env("toy_shuttle"), cwd="/",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "LABFERENCE_TASKS: 'toy_shuttle' is not NAME=MODULE or NAME=FOLDER" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_a_graph_episode_of_the_toy_family_is_scored(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([LABFERENCE, "launch", "toy_sim.launch.py", f"output_dir:={out}", "episodes:=1",
                           "system:=toy_expert", "seed:=3", "record:=false"], env=_env(f"toy_shuttle={FOLDER}"),
                          cwd="/", capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    (attempt,) = [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]
    assert attempt["status"] == "ok"
    run = json.loads((out / "episodes" / attempt["episode_id"] / "run.json").read_text())
    (scores,) = _scores(out / "episodes" / attempt["episode_id"])
    assert run["task"]["contract_id"] == "toy_shuttle.basic@0.1.0"
    assert scores["contract"]["id"] == "toy_shuttle.basic@0.1.0"
    assert (scores["first_choice_correct"], scores["executed"], scores["physically_complete"]) == (True, True, True)
    goal = run["instance"]["goal_pad"]
    assert scores["opportunity_records"][0]["first_choice"] == {"type": "insert", "object": "puck",
                                                               "destination": goal}


@pytest.mark.slow
def test_a_matched_continuation_of_the_toy_family_is_scored(tmp_path):
    proc = subprocess.run([LABFERENCE, "diagnose-oracle", str(tmp_path / "pop.jsonl"), "--new", "1",
                           "--task", "toy_shuttle", "--system", "toy_expert", "--budget-s", "30",
                           "--records", str(tmp_path / "records")], env=_env(f"toy_shuttle={FOLDER}"),
                          cwd="/", capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "1/1 checkpoints verified" in proc.stdout
    (line,) = (tmp_path / "pop.jsonl").read_text().splitlines()
    assert json.loads(line)["task"] == "toy_shuttle"
    (scores,) = _scores(tmp_path / "records")
    assert scores["contract"]["id"] == "toy_shuttle.basic@0.1.0"
    assert (scores["first_choice_correct"], scores["physically_complete"]) == (True, True)
