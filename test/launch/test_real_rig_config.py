"""The ros2_control controllers file for the real Panda names what the graph uses
(it cannot run here: no robot, no controller_manager)."""
from __future__ import annotations

import pathlib

import yaml

from labference_ros.core.action_spec import reference_joint_spec
from labference_ros.graphs.weighing_sim import GRAPH
from labference_ros.recording.topics import RECORDED_TOPICS

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_the_arm_controller_is_the_one_the_bridge_commands():
    config = yaml.safe_load((REPO / "config" / "franka_controllers.yaml").read_text())
    manager = config["controller_manager"]["ros__parameters"]
    arm = config["panda_arm_controller"]["ros__parameters"]
    assert manager["panda_arm_controller"]["type"] == "joint_trajectory_controller/JointTrajectoryController"
    assert manager["joint_state_broadcaster"]["type"] == "joint_state_broadcaster/JointStateBroadcaster"
    assert arm["joints"] == list(reference_joint_spec().dimension_names[:7])
    assert arm["command_interfaces"] == ["position"]  # the bridge sends absolute joint targets
    # The topic the bridge publishes and the recorder records is this controller's.
    assert "/panda_arm_controller/joint_trajectory" in RECORDED_TOPICS
    bridge = next(n for n in GRAPH.nodes if n.name == "policy_bridge")
    assert bridge.parameters.get("controller", "panda_arm_controller") == "panda_arm_controller"
    assert "config" in (REPO / "CMakeLists.txt").read_text().split("install(DIRECTORY launch rviz")[1].split(")")[0]
    assert (REPO / "scripts" / "balance_sics").stat().st_mode & 0o111


def _source(executable: str) -> str:
    return (REPO / "labference_ros" / "nodes" / f"{executable}.py").read_text()


def test_the_real_graph_replaces_the_simulator_with_what_a_real_cell_has():
    from labference_ros.graphs import graph_for
    from labference_ros.graphs.weighing_real import GRAPH as REAL

    assert graph_for("weighing_real.launch.py") is REAL
    nodes = {n.name: n for n in REAL.nodes}
    executables = {n.executable for n in REAL.nodes}
    # No simulator and no simulated load cell; the sensor-side nodes instead.
    assert not executables & {"lab_sim", "balance"}
    assert {"balance_sics", "fiducial_tracker", "world_estimator", "franka_gripper_bridge"} <= executables
    # The referee scores the estimator's checked reading and its world state, nothing privileged.
    assert dict(nodes["referee"].remappings) == {"/balance/reading": "/evaluator/balance_reading"}
    estimator = _source("world_estimator")
    for topic in ("/evaluator/world_state", "/evaluator/balance_reading", "/world_estimator/reset",
                  "/markers/poses", "/balance/reading", "/joint_states", "/panda_gripper/command"):
        assert f'"{topic}"' in estimator, topic
    assert '"/markers/poses"' in _source("fiducial_tracker")
    assert '"/panda_gripper/command"' in _source("franka_gripper_bridge")
    assert '"/balance/reading"' in _source("balance_sics")
    # The runner's reset is the operator's set-up, checked by the estimator.
    runner = nodes["episode_runner"]
    assert runner.ends_graph and runner.parameters["setup"] == "operator"
    assert dict(runner.remappings) == {"/lab_sim/reset": "/world_estimator/reset"}
    # A real arm: realtime, inside the Franka envelope, on the controller config/franka_controllers.yaml names.
    bridge = nodes["policy_bridge"].parameters
    assert bridge["step_mode"] == "realtime" and bridge["safety"] == "franka"
    assert bridge.get("controller", "panda_arm_controller") in yaml.safe_load(
        (REPO / "config" / "franka_controllers.yaml").read_text())
    # Arguments shared with the sim graph mean the same; every node's Param names a declared argument.
    sim = {a.name: a for a in GRAPH.arguments}
    for arg in REAL.arguments:
        if arg.name in sim and arg.name != "camera_rate":
            assert arg == sim[arg.name]
    declared = {a.name for a in REAL.arguments}
    from labference_ros.graphs.graph import Param

    for node in REAL.nodes:
        for value in node.parameters.values():
            if isinstance(value, Param):
                assert value.argument in declared, (node.name, value.argument)
    # The generated launch file carries the remappings and the operator set-up.
    text = (REPO / "launch" / "weighing_real.launch.py").read_text()
    assert "('/balance/reading', '/evaluator/balance_reading')" in text
    assert "('/lab_sim/reset', '/world_estimator/reset')" in text
    assert "'setup': 'operator'" in text
    for script in ("world_estimator", "fiducial_tracker", "franka_gripper_bridge"):
        assert (REPO / "scripts" / script).stat().st_mode & 0o111
