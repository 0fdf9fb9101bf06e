"""Shared bits of the stand-in nodes: knobs from the environment, episode index from its id.

Knobs (environment variables, comma-separated episode indices):
FAKE_COMPLETE       referee reports physical completion 1 s of sim time after start
FAKE_BRIDGE_DONE    policy bridge reports 'done' 1 s of sim time after start
FAKE_BRIDGE_HANG    policy bridge's start_episode answers only after FAKE_HANG_S wall seconds
FAKE_SIM_EXIT_AT    lab_sim exits with code 3 when asked to reset this episode
FAKE_SETUP_REFUSALS world estimator refuses this many scene checks per episode before it accepts
"""
from __future__ import annotations

import os


def indices(name: str) -> set[int]:
    return {int(x) for x in os.environ.get(name, "").split(",") if x.strip()}


def index_of(episode_id: str) -> int:
    return int(episode_id.split("_", 1)[0])


def sim_seconds(clock_msg) -> float:
    return clock_msg.clock.sec + clock_msg.clock.nanosec * 1e-9


def best_effort(depth: int = 1):
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    return QoSProfile(depth=depth, reliability=ReliabilityPolicy.BEST_EFFORT)


# The data topics each real node publishes and subscribes, so a stand-in graph
# looks connected to the runner (which waits for these before its first episode).
TOPIC_TYPES = {
    "/evaluator/world_state": ("labference.msg", "WorldState"),
    "/balance/wrench": ("geometry_msgs.msg", "WrenchStamped"),
    "/balance/reading": ("labference.msg", "BalanceReading"),
    "/joint_states": ("sensor_msgs.msg", "JointState"),
    "/cameras/front/image_raw": ("sensor_msgs.msg", "Image"),
    "/panda_arm_controller/joint_trajectory": ("trajectory_msgs.msg", "JointTrajectory"),
    "/panda_gripper/command": ("labference.msg", "GripperCommand"),
    "/policy/receipts": ("labference.msg", "DeliveryReceipt"),
    "/referee/receipts": ("labference.msg", "DeliveryReceipt"),
}
EDGES = {
    "lab_sim": (("/evaluator/world_state", "/balance/wrench", "/joint_states", "/cameras/front/image_raw"),
                ("/panda_arm_controller/joint_trajectory", "/panda_gripper/command", "/balance/reading")),
    "balance": (("/balance/reading",), ("/balance/wrench",)),
    "referee": (("/referee/receipts",), ("/evaluator/world_state", "/balance/reading", "/policy/receipts")),
    # A real cell's side of the real graph: the world estimator, the robot PC's joint
    # states and camera, the arm's controller and the gripper bridge.
    "real_cell": (("/evaluator/world_state", "/joint_states", "/cameras/front/image_raw"),
                  ("/panda_arm_controller/joint_trajectory", "/panda_gripper/command", "/balance/reading")),
    "policy_bridge": (("/panda_arm_controller/joint_trajectory", "/panda_gripper/command", "/policy/receipts"),
                      ("/joint_states", "/cameras/front/image_raw", "/referee/receipts")),
}


def occupy_topics(node, role: str) -> None:
    import importlib

    publishes, subscribes = EDGES[role]
    node._fake_endpoints = []
    for topic in publishes + subscribes:
        module, name = TOPIC_TYPES[topic]
        msg_type = getattr(importlib.import_module(module), name)
        if topic in publishes:
            node._fake_endpoints.append(node.create_publisher(msg_type, topic, 10))
        else:
            node._fake_endpoints.append(node.create_subscription(msg_type, topic, lambda _m: None, 10))


CLOCK_STEP_S = 0.1  # sim seconds per 20 ms tick: a clock at 5x real time


def start_clock(node) -> None:
    """Publish /clock from `node` at 5x real time from 0 (node.t holds the time)."""
    from rosgraph_msgs.msg import Clock

    node.t = 0.0
    pub = node.create_publisher(Clock, "/clock", 10)

    def tick():
        node.t += CLOCK_STEP_S
        msg = Clock()
        msg.clock.sec, msg.clock.nanosec = int(node.t), int((node.t % 1.0) * 1e9)
        pub.publish(msg)

    node.create_timer(0.02, tick)
