"""franka_ros2's robot PC (nodes/franka_standin.py) started by the launch in a real-cell
node's place, so it shares the launch's ROS domain: its scheduled faults come from
FAKE_ARM_FAULTS ("0:reflex,2:stall"). Each width the hand goes to is printed
("hand <action> <width>"), so a test sees a grasp and the release after it."""
from __future__ import annotations

import os
import sys

from labference_ros.nodes.runtime import run_node


def make():
    from rclpy.parameter import Parameter

    from labference_ros.nodes.franka_standin import FrankaStandIn

    class PrintingStandIn(FrankaStandIn):
        def on_move(self, handle):
            print(f"hand move {handle.request.width:.3f}", flush=True)
            return super().on_move(handle)

        def on_grasp(self, handle):
            print(f"hand grasp {handle.request.width:.3f}", flush=True)
            return super().on_grasp(handle)

        def on_homing(self, handle):
            print("hand homing", flush=True)
            return super().on_homing(handle)

    schedule = os.environ.get("FAKE_ARM_FAULTS", "")
    return PrintingStandIn(parameter_overrides=[Parameter("fault_episodes", Parameter.Type.STRING, schedule)])


if __name__ == "__main__":
    sys.exit(run_node(make))
