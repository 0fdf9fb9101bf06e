"""Stand-in franka_arm_bridge whose arm fails: for the episodes listed in FAKE_ARM_FAULT,
once /policy_bridge/status says the episode runs, it reports a hardware fault on
/hardware/fault as the real bridge does (nodes/franka_arm_bridge.py); for those listed in
FAKE_ARM_LATE it reports the tested system's late rows on /arm/late_rows instead."""
from __future__ import annotations

import json
import sys

from fake_common import index_of, indices
from labference_ros.nodes.runtime import run_node

CAUSE = "robot error: joint_reflex (robot mode reflex)"
LATE = "a row came late or after a gap and the arm cannot follow it within the fr3's limits (...)"


def make():
    from rclpy.node import Node
    from std_msgs.msg import String

    class ArmFault(Node):
        def __init__(self):
            super().__init__("franka_arm_bridge")
            self.failing = indices("FAKE_ARM_FAULT")
            self.late = indices("FAKE_ARM_LATE")
            self.reported: set[str] = set()
            self.pub = self.create_publisher(String, "/hardware/fault", 10)
            self.pub_late = self.create_publisher(String, "/arm/late_rows", 10)
            self.create_subscription(String, "/policy_bridge/status", self.on_status, 10)

        def on_status(self, msg):
            data = json.loads(msg.data)
            episode = str(data["episode_id"])
            if data["state"] != "running" or episode in self.reported:
                return
            if index_of(episode) in self.failing:
                self.pub.publish(String(data=json.dumps({"episode_id": episode, "cause": CAUSE, "t": 0.0})))
            elif index_of(episode) in self.late:
                self.pub_late.publish(String(data=json.dumps({"episode_id": episode, "cause": LATE, "t": 0.0,
                                                              "row_stamp": -0.45, "row_age_s": 0.45})))
            else:
                return
            self.reported.add(episode)

    return ArmFault()


if __name__ == "__main__":
    sys.exit(run_node(make))
