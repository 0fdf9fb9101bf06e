"""A task family added from this folder alone (LABFERENCE_TASKS=toy_shuttle=<this folder>):
the registry, the tested-system registry, the graph lookup and `labference launch` find it
in a fresh process, as every node of a graph would, with no project file changed."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

FOLDER = pathlib.Path(__file__).resolve().parent
LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")


def _env(value: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the folder is found through the variable
    return {**env, "LABFERENCE_TASKS": value}


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
