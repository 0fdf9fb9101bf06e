"""Plays the episode runner's neighbours around franka_arm_bridge (arm_homing true) and
franka_standin (the arm standing away from home, no hand bridge) and records the arm's
homing events on /operator/events:
  1. the session: the arm is homed from where it stands, no reflex on the way;
  2. episode e1 ends: the hand is lifted clear and homing begins; the joint states stall
     during the homing: it fails, naming the stale joint states;
  3. episode e2 (joint states back): a reflex before it ends leaves the arm not ready:
     the lift is refused with that reason and the homing after it is not done.
Prints "RESULT <json>"."""
from __future__ import annotations

import json
import time

import numpy as np

from peer_session import PeerSession

HOME = [0.0, 0.0, 0.0, -1.57079, 0.0, 1.57079, -0.7853]


def main() -> int:
    peer = PeerSession("arm_homing_probe")
    from franka_msgs.msg import FrankaRobotState
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    node = peer.node
    qos = QoSProfile(depth=10)
    events: list[dict] = []
    joints: list[JointState] = []
    modes: list[int] = []
    node.create_subscription(String, "/operator/events", lambda m: events.append(json.loads(m.data)),
                             QoSProfile(depth=50, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    node.create_subscription(JointState, "/joint_states", joints.append, qos)
    node.create_subscription(FrankaRobotState, "/franka_robot_state_broadcaster/robot_state",
                             lambda m: modes.append(int(m.robot_mode)), qos)
    status = node.create_publisher(String, "/policy_bridge/status", qos)
    inject = node.create_publisher(String, "/franka_standin/inject", qos)

    def wait_until(condition, timeout):
        deadline = time.monotonic() + timeout
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.02)
        return condition()

    def say(episode, state):
        status.publish(String(data=json.dumps({"episode_id": episode, "state": state, "reason": ""})))

    def arm_events(episode, n, timeout=60):
        wait_until(lambda: len([e for e in events if e["episode_id"] == episode]) >= n, timeout)
        return [[e["action"], e["detail"]] for e in events if e["episode_id"] == episode]

    result = {}
    assert wait_until(lambda: joints and status.get_subscription_count() and inject.get_subscription_count(),
                      60), "no graph"
    result["session"] = arm_events("", 1)
    result["session_at"] = [float(x) for x in joints[-1].position[:7]]
    result["session_reflex"] = 4 in modes
    for episode in ("e1", "e2"):
        say(episode, "running")
        time.sleep(0.5)
        if episode == "e2":
            inject.publish(String(data="reflex"))
            wait_until(lambda: modes and modes[-1] == 4, 10)
        for _ in range(3):  # as the policy bridge says it, more than once
            say(episode, "done")
            time.sleep(0.1)
        if episode == "e1":
            arm_events("e1", 1)  # lifted (5 cm: about 0.2 rad of joint 4 from home)

            def way_home():
                return float(np.abs(np.array(joints[-1].position[:7]) - HOME).max())

            wait_until(lambda: way_home() < 0.17, 20)  # the homing is under way
            inject.publish(String(data="stall"))
            result["stalled_short_of_home"] = way_home()
        result[episode] = arm_events(episode, 2)
        inject.publish(String(data="resume"))
        time.sleep(0.5)
    print("RESULT " + json.dumps(result), flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
