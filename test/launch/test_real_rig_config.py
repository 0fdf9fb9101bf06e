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
