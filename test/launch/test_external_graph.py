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
    # The runner resets through simulation_interfaces (sim_loader's LoadWorld), not lab_sim's own service.
    assert ("/lab_sim/reset", "/sim_loader/reset") in nodes["episode_runner"].remappings
    assert nodes["episode_runner"].parameters["scene_node"] == "sim_loader"
    # A privileged tested system reads the estimator's world state; only the shadow referee reads lab_sim's.
    assert nodes["policy_bridge"].remappings == ()


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


def test_the_isaac_graph_starts_no_simulator_and_nothing_reads_a_simulators_own_state():
    from labference_ros.graphs.weighing_isaac import GRAPH as ISAAC

    nodes = {n.name: n for n in ISAAC.nodes}
    assert "lab_sim" not in nodes and "shadow_referee" not in nodes
    assert nodes["episode_runner"].parameters["shadow_referee"] is False
    assert all("/shadow/world_state" not in dict(n.remappings).values() for n in ISAAC.nodes)
    assert {"sim_loader", "entity_tracker", "world_estimator", "sim_balance"} <= set(nodes)
    # No /balance/tare comes from another simulator: the balance takes the pan's weight from the graph.
    assert nodes["sim_balance"].parameters["empty_force_n"].argument == "empty_pan_force_n"


def test_the_isaac_graphs_empty_pan_force_is_the_pan_lab_sim_measures():
    from labference_ros.graphs.weighing_isaac import EMPTY_PAN_FORCE_N
    from labference_ros.sim.mujoco_backend import MujocoBackend
    from labference_ros.tasks.weighing.instances import generate

    backend = MujocoBackend(None, "feedback_weighing")
    backend.load(generate("basic", 1, task_seed=3, layout_seed=3, policy_seed=0)[0])
    assert float(EMPTY_PAN_FORCE_N) == pytest.approx(backend.empty_pan_wrench().force[2], abs=1e-9)


@pytest.mark.slow
def test_the_isaac_graph_scores_an_episode_of_a_simulator_started_on_its_own(tmp_path):
    """weighing_isaac.launch.py with lab_sim started by hand beside it, as Isaac Sim would be:
    the instance goes through LoadWorld, the referee scores from entity states and the
    wrench, and the episode reaches a choice and completes."""
    run_dir = tmp_path / "run"
    labference = os.path.join(os.path.dirname(sys.executable), "labference")
    env = {k: v for k, v in os.environ.items() if k != "ROS_DOMAIN_ID"}
    env["MUJOCO_GL"] = "egl"
    proc = Proc([labference, "launch", "weighing_isaac.launch.py", "episodes:=1", "system:=scripted_expert",
                 "seed:=0", "record:=false", f"output_dir:={run_dir}"], env=env)
    sim = None
    try:
        said = proc.wait_for("[launch] ROS domain ", timeout=60)
        assert said, proc.seen[-40:]
        domain = said[0].split()[3]
        # The simulator outside the graph: nothing in it reads lab_sim's own world state, nor its tare
        # (a topic of lab_sim's own).
        sim = Proc([sys.executable, "-m", "labference_ros.nodes.lab_sim", "--ros-args", "-p", "step_mode:=realtime",
                    "-r", "/evaluator/world_state:=/lab_sim/world_state", "-r", "/balance/tare:=/lab_sim/tare"],
                   env={**env, "ROS_DOMAIN_ID": domain})
        code = proc.popen.wait(timeout=600)
    finally:
        proc.stop()
        if sim is not None:
            sim.stop()
    proc.wait_for("\0", timeout=2)
    assert code == 0, "\n".join(proc.seen[-80:] + (sim.seen[-20:] if sim else []))
    assert any("loaded" in line and "through LoadWorld" in line for line in proc.seen), proc.seen[-80:]
    summary = json.loads((run_dir / "summary.json").read_text())
    (row,) = summary["per_episode"]
    assert row["status"] == "ok", row
    scores = json.loads((run_dir / "episodes" / row["episode_id"] / "scores.json").read_text())
    assert any(o.get("first_choice") for o in scores["opportunity_records"]), scores
    assert scores["physically_complete"]
    assert not (run_dir / "episodes" / row["episode_id"] / "shadow").exists()
