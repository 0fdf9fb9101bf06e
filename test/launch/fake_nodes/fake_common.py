"""Shared bits of the stand-in nodes: knobs from the environment, episode index from its id.

Knobs (environment variables, comma-separated episode indices):
FAKE_COMPLETE       referee reports physical completion 1 s of sim time after start
FAKE_BRIDGE_DONE    policy bridge reports 'done' 1 s of sim time after start
FAKE_BRIDGE_HANG    policy bridge's start_episode answers only after FAKE_HANG_S wall seconds
FAKE_SIM_EXIT_AT    lab_sim exits with code 3 when asked to reset this episode
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
