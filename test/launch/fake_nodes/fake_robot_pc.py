"""franka_ros2's robot PC (nodes/franka_standin.py) started by the launch in a real-cell
node's place, so it shares the launch's ROS domain: its scheduled faults come from
FAKE_ARM_FAULTS ("0:reflex,2:stall")."""
from __future__ import annotations

import os
import sys

from labference_ros.nodes.runtime import run_node


def make():
    from rclpy.parameter import Parameter

    from labference_ros.nodes.franka_standin import FrankaStandIn

    schedule = os.environ.get("FAKE_ARM_FAULTS", "")
    return FrankaStandIn(parameter_overrides=[Parameter("fault_episodes", Parameter.Type.STRING, schedule)])


if __name__ == "__main__":
    sys.exit(run_node(make))
