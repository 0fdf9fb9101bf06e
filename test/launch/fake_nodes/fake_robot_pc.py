"""franka_ros2's robot PC (nodes/franka_standin.py) started by the launch in a real-cell
node's place, so it shares the launch's ROS domain: its scheduled faults come from
FAKE_ARM_FAULTS ("0:reflex,2:stall"). Each width the hand goes to is printed
("hand <action> <width>"), so a test sees a grasp and the release after it. FAKE_ARM_START
(7 comma-separated joint positions) starts the arm there instead of at the cell's home;
each trajectory the arm is sent is printed ("arm trajectory <points> <seconds>"), and so
is a reflex ("arm reflex <error>: <detail>")."""
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

        def on_trajectory(self, msg):
            t = msg.points[-1].time_from_start if msg.points else None
            print(f"arm trajectory {len(msg.points)} {t.sec + t.nanosec * 1e-9 if t else 0:.2f}", flush=True)
            return super().on_trajectory(msg)

        def _advance(self):
            error = self.arm.error
            super()._advance()
            if self.arm.error and not error:
                print(f"arm reflex {self.arm.error}: {self.arm.error_detail}", flush=True)

    schedule = os.environ.get("FAKE_ARM_FAULTS", "")
    overrides = [Parameter("fault_episodes", Parameter.Type.STRING, schedule)]
    if os.environ.get("FAKE_ARM_START"):
        start = [float(x) for x in os.environ["FAKE_ARM_START"].split(",")]
        overrides.append(Parameter("start", Parameter.Type.DOUBLE_ARRAY, start))
    return PrintingStandIn(parameter_overrides=overrides)


if __name__ == "__main__":
    sys.exit(run_node(make))
