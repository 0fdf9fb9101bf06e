"""The ros2_control controllers file is franka_ros2's for the rig's robot, and the real
graph's nodes read the robot from one argument (the controllers cannot run here: no
robot, no controller_manager)."""
from __future__ import annotations

import pathlib

import yaml

from labference_ros.cell.controllers import controllers_config
from labference_ros.cell.description import weighing_cell
from labference_ros.core.robots import FR3
from labference_ros.graphs.weighing_sim import ARGUMENTS as SHARED_ARGUMENTS, GRAPH
from labference_ros.recording.topics import RECORDED_TOPICS

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_the_controllers_file_is_franka_ros2s_for_the_rigs_robot():
    config = yaml.safe_load((REPO / "config" / "franka_controllers.yaml").read_text())
    robot = weighing_cell().robot.rig_robot
    assert robot is FR3
    assert config == controllers_config(robot)  # regenerate: python -m labference_ros.cell.controllers fr3
    manager = config["controller_manager"]["ros__parameters"]
    arm = config["joint_trajectory_controller"]["ros__parameters"]
    assert manager["update_rate"] == 1000
    assert manager["joint_trajectory_controller"]["type"] == "joint_trajectory_controller/JointTrajectoryController"
    assert manager["joint_state_broadcaster"]["type"] == "joint_state_broadcaster/JointStateBroadcaster"
    # As franka_ros2 ships it: effort with franka's PD gains, position and velocity read back.
    assert arm["joints"] == [f"fr3_joint{i}" for i in range(1, 8)]
    assert arm["command_interfaces"] == ["effort"] and arm["state_interfaces"] == ["position", "velocity"]
    assert [arm["gains"][j]["p"] for j in arm["joints"]] == [600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0]
    assert [arm["gains"][j]["d"] for j in arm["joints"]] == [30.0, 30.0, 30.0, 30.0, 10.0, 10.0, 5.0]
    assert config["franka_robot_state_broadcaster"]["ros__parameters"]["arm_id"] == "fr3"
    assert "0.1.13" in (REPO / "config" / "franka_controllers.yaml").read_text()
    # The arm bridge commands this controller; the graph's own row topic stays the simulator's.
    assert f"/{robot.trajectory_controller}/joint_trajectory" == "/joint_trajectory_controller/joint_trajectory"
    assert "/panda_arm_controller/joint_trajectory" in RECORDED_TOPICS
    bridge = next(n for n in GRAPH.nodes if n.name == "policy_bridge")
    assert bridge.parameters.get("controller", "panda_arm_controller") == "panda_arm_controller"
    assert "config" in (REPO / "CMakeLists.txt").read_text().split("install(DIRECTORY launch rviz")[1].split(")")[0]
    assert (REPO / "scripts" / "balance_sics").stat().st_mode & 0o111


def _source(executable: str) -> str:
    return (REPO / "labference_ros" / "nodes" / f"{executable}.py").read_text()


def test_the_real_graph_replaces_the_simulator_with_what_a_real_cell_has():
    from labference_ros.graphs import graph_for
    from labference_ros.graphs.graph import Param
    from labference_ros.graphs.weighing_real import GRAPH as REAL

    assert graph_for("weighing_real.launch.py") is REAL
    nodes = {n.name: n for n in REAL.nodes}
    executables = {n.executable for n in REAL.nodes}
    # No simulator and no simulated load cell; the sensor-side nodes instead.
    assert not executables & {"lab_sim", "balance"}
    assert {"balance_sics", "fiducial_tracker", "world_estimator", "franka_arm_bridge",
            "franka_gripper_bridge"} <= executables
    # The referee scores the estimator's checked reading and its world state, nothing privileged.
    assert dict(nodes["referee"].remappings) == {"/balance/reading": "/evaluator/balance_reading"}
    estimator = _source("world_estimator")
    for topic in ("/evaluator/world_state", "/evaluator/balance_reading", "/world_estimator/reset",
                  "/markers/poses", "/balance/reading", "/joint_states", "/panda_gripper/command"):
        assert f'"{topic}"' in estimator, topic
    assert '"/markers/poses"' in _source("fiducial_tracker")
    assert '"/panda_gripper/command"' in _source("franka_gripper_bridge")
    # The robot model reaches every node that meets the robot, from one argument (default the cell's).
    assert REAL.argument("robot_model").default == weighing_cell().robot.rig_model == "fr3"
    for name in ("world_estimator", "franka_arm_bridge", "franka_gripper_bridge"):
        assert nodes[name].parameters["robot_model"] == Param("robot_model"), name
    assert nodes["policy_bridge"].parameters["safety"] == Param("robot_model")
    # The policy bridge reads the arm under the graph's joint names, which the arm bridge republishes.
    assert dict(nodes["policy_bridge"].remappings) == {"/joint_states": "/arm/joint_states"}
    assert '"/arm/joint_states"' in _source("franka_arm_bridge")
    # Two computers: discovery reaches the subnet unless told otherwise.
    assert REAL.argument("discovery").default == "subnet"
    assert '"/balance/reading"' in _source("balance_sics")
    # The runner's reset is the operator's set-up, checked by the estimator.
    runner = nodes["episode_runner"]
    assert runner.ends_graph and runner.parameters["setup"] == "operator"
    assert dict(runner.remappings) == {"/lab_sim/reset": "/world_estimator/reset"}
    # A real arm: realtime.
    assert nodes["policy_bridge"].parameters["step_mode"] == "realtime"
    # Arguments shared with the sim graph mean the same (the sim graph's condition adds hidden_event,
    # which only the simulator's environment runs); every node's Param names a declared argument.
    sim = {a.name: a for a in GRAPH.arguments}
    assert "hidden_event" in sim["condition"].choices and "hidden_event" not in REAL.argument("condition").choices
    sim["condition"] = next(a for a in SHARED_ARGUMENTS if a.name == "condition")
    for arg in REAL.arguments:
        if arg.name in sim and arg.name != "camera_rate":
            assert arg == sim[arg.name]
    declared = {a.name for a in REAL.arguments}

    for node in REAL.nodes:
        for value in node.parameters.values():
            if isinstance(value, Param):
                assert value.argument in declared, (node.name, value.argument)
    # The generated launch file carries the remappings and the operator set-up.
    text = (REPO / "launch" / "weighing_real.launch.py").read_text()
    assert "('/balance/reading', '/evaluator/balance_reading')" in text
    assert "('/lab_sim/reset', '/world_estimator/reset')" in text
    assert "'setup': 'operator'" in text
    for script in ("world_estimator", "fiducial_tracker", "franka_arm_bridge", "franka_gripper_bridge",
                   "franka_standin"):
        assert (REPO / "scripts" / script).stat().st_mode & 0o111
