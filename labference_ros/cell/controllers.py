"""The ros2_control controllers file a rig's robot PC runs, from the robot model.

What franka_ros2 ships (checked against franka_ros2 0.1.13, franka_bringup/config/
controllers.yaml, humble branch, commit 40cf08b): controller_manager at 1 kHz, a
joint_state_broadcaster, the franka_robot_state_broadcaster, and a
joint_trajectory_controller on the effort command interface with franka's PD gains,
reading position and velocity. Joint names follow franka_ros2's `<arm_id>_joint1..7`
(fr3 on an FR3). config/franka_controllers.yaml is this for the cell's rig model;
`python -m labference_ros.cell.controllers panda` writes the Panda's.
"""
from __future__ import annotations

import sys

import yaml

from labference_ros.core.robots import RobotModel, robot_model

# franka_ros2 0.1.13's joint_trajectory_controller gains (p, d) per joint.
TRAJECTORY_GAINS = ((600.0, 30.0), (600.0, 30.0), (600.0, 30.0), (600.0, 30.0), (250.0, 10.0), (150.0, 10.0),
                    (50.0, 5.0))
FRANKA_ROS2_CHECKED = "0.1.13"


def controllers_config(robot: RobotModel) -> dict:
    controller = robot.trajectory_controller
    return {
        "controller_manager": {"ros__parameters": {
            "update_rate": 1000,
            controller: {"type": "joint_trajectory_controller/JointTrajectoryController"},
            "joint_state_broadcaster": {"type": "joint_state_broadcaster/JointStateBroadcaster"},
            "franka_robot_state_broadcaster": {"type": "franka_robot_state_broadcaster/FrankaRobotStateBroadcaster"},
        }},
        "franka_robot_state_broadcaster": {"ros__parameters": {"arm_id": robot.name}},
        controller: {"ros__parameters": {
            "joints": list(robot.arm_joints),
            "command_interfaces": ["effort"],
            "state_interfaces": ["position", "velocity"],
            "gains": {joint: {"p": p, "d": d, "i": 0.0, "i_clamp": 1.0}
                      for joint, (p, d) in zip(robot.arm_joints, TRAJECTORY_GAINS)},
        }},
    }


HEADER = f"""\
# ros2_control controllers for the robot PC (franka_ros2's hardware interface), written by
# `python -m labference_ros.cell.controllers {{model}}` from core/robots.py. What
# franka_ros2 {FRANKA_ROS2_CHECKED} ships in franka_bringup/config/controllers.yaml (the
# trajectory controller on the effort interface with franka's gains, the joint state and
# robot state broadcasters), with the joint names of arm_id {{model}}.
# franka_arm_bridge sends the graph's rows to /joint_trajectory_controller/joint_trajectory
# (positions, velocities, accelerations; stamped in the robot PC's clock) and reads /joint_states and
# /franka_robot_state_broadcaster/robot_state. Not run against a robot here (docs/real-rig.md).
"""


def controllers_yaml(robot: RobotModel) -> str:
    return HEADER.format(model=robot.name) + yaml.safe_dump(controllers_config(robot), sort_keys=False)


if __name__ == "__main__":
    sys.stdout.write(controllers_yaml(robot_model(sys.argv[1] if len(sys.argv) > 1 else "fr3")))
