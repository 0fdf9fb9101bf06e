"""The simulator-neutral referee path (weighing_external.launch.py) between real processes:
the referee scores from what any ROS 2 simulator offers (simulation_interfaces entity
states through entity_tracker, the balance node over the standard wrench, the world
estimator), a shadow referee from lab_sim's privileged state; on a fixed seed the two
agree on every opportunity's legal set, first choice, its correctness and execution,
and on completion, and the episode reached a choice."""
from __future__ import annotations

import json
import os
import sys

import pytest

from labference_ros.graphs.weighing_external import GRAPH
from labference_ros.nodes.entity_tracker import object_name
from labference_ros.reporting.agreement import compare_run
from rosproc import Proc


def test_an_entity_is_the_cells_object_by_the_last_element_of_its_name():
    assert object_name("sample") == "sample"
    assert object_name("/World/std_10") == "std_10"
    assert object_name("/World/std_10/") == "std_10"


def test_the_referee_reads_nothing_only_lab_sim_publishes():
    nodes = {n.name: n for n in GRAPH.nodes}
    assert "fiducial_tracker" not in nodes and "sics_emulator" not in nodes
    assert nodes["referee"].remappings == ()  # /evaluator/world_state and /balance/reading: the estimator's
    assert ("/evaluator/world_state", "/shadow/world_state") in nodes["lab_sim"].remappings
    assert ("/evaluator/balance_reading", "/balance/reading") in nodes["world_estimator"].remappings
    assert nodes["lab_sim"].parameters["fiducials"] is False


@pytest.mark.slow
def test_the_referee_on_entity_states_agrees_with_the_shadow_referee(tmp_path):
    run_dir = tmp_path / "run"
    labference = os.path.join(os.path.dirname(sys.executable), "labference")
    proc = Proc([labference, "launch", "weighing_external.launch.py", "episodes:=1", "system:=scripted_expert",
                 "seed:=0", "record:=false", f"output_dir:={run_dir}"], env={**os.environ, "MUJOCO_GL": "egl"})
    try:
        code = proc.popen.wait(timeout=600)
    finally:
        proc.stop()
    proc.wait_for("\0", timeout=2)
    assert code == 0, "\n".join(proc.seen[-80:])
    (episode,) = compare_run(run_dir)
    assert episode.agrees, (episode.problem, episode.differences)
    privileged = json.loads((run_dir / "episodes" / episode.episode / "shadow" / "scores.json").read_text())
    assert any(o.get("first_choice") for o in privileged["opportunity_records"]), privileged
    assert privileged["physically_complete"]
