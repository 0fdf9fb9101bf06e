"""Stand-in franka_arm_bridge whose arm fails: for the episodes listed in FAKE_ARM_FAULT,
once /policy_bridge/status says the episode runs, it reports a hardware fault on
/hardware/fault as the real bridge does (nodes/franka_arm_bridge.py)."""
from __future__ import annotations

import json
import sys

from fake_common import index_of, indices
from labference_ros.nodes.runtime import run_node

CAUSE = "robot error: joint_reflex (robot mode reflex)"


def make():
    from rclpy.node import Node
    from std_msgs.msg import String

    class ArmFault(Node):
        def __init__(self):
            super().__init__("franka_arm_bridge")
            self.failing = indices("FAKE_ARM_FAULT")
            self.reported: set[str] = set()
            self.pub = self.create_publisher(String, "/hardware/fault", 10)
            self.create_subscription(String, "/policy_bridge/status", self.on_status, 10)

        def on_status(self, msg):
            data = json.loads(msg.data)
            episode = str(data["episode_id"])
            if data["state"] != "running" or episode in self.reported or index_of(episode) not in self.failing:
                return
            self.reported.add(episode)
            self.pub.publish(String(data=json.dumps({"episode_id": episode, "cause": CAUSE, "t": 0.0})))

    return ArmFault()


if __name__ == "__main__":
    sys.exit(run_node(make))
