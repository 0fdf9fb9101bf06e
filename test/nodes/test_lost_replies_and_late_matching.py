"""Peers that answer late or never, and a reader a writer never matches: entity_tracker
and sim_loader ask again when a simulator's first reply never comes (a reply Fast DDS
dropped before its writer matched the client), and the balance holds its readings after
a tare until its writer has matched every reader the graph shows."""
from __future__ import annotations

import json
import pathlib
import sys

import pytest

from labference_ros.rosenv import loopback_environ
from ros_domains import own_domain
from rosproc import Proc

PEERS = pathlib.Path(__file__).resolve().parents[1] / "peers"
# A reader of /balance/reading with another type (its own process: one participant takes one
# type per topic), which the balance's writer can never match.
OTHER_TYPE_READER = """
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_msgs.msg import String
from labference_ros.nodes.runtime import init_ros
rclpy = init_ros([])
node = rclpy.create_node("other_type_reader")
node.create_subscription(String, "/balance/reading", lambda m: None,
                         QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL))
rclpy.spin(node)
"""


@pytest.fixture
def env():
    """This test's processes' environment: loopback DDS on a ROS domain of its own."""
    with own_domain() as domain:
        yield {**loopback_environ(), "ROS_DOMAIN_ID": domain}


def test_a_lost_entity_states_reply_is_asked_again_and_the_poses_flow(env):
    simulator = Proc([sys.executable, str(PEERS / "silent_first_entities.py")], env=env)
    tracker = Proc([sys.executable, "-m", "labference_ros.nodes.entity_tracker", "--ros-args", "-p", "rate:=20.0"],
                   env=env)
    try:
        poses = simulator.wait_for("POSES", count=3, timeout=60)
    finally:
        tracker.stop()
        simulator.stop()
    asked = [line for line in simulator.seen if line.startswith("ASKED")]
    assert len(poses) == 3, simulator.seen[-20:] + tracker.seen[-20:]
    assert poses[0].endswith("['sample']")
    assert len(asked) >= 4  # the first never answered, then one request per pose message


def test_a_lost_load_world_reply_is_asked_again_within_the_reset(env):
    """sim_loader against a simulator whose first LoadWorld reply never comes: asked again
    after 8 s, the second answer loads the instance and the reset succeeds."""
    loader = Proc([sys.executable, "-m", "labference_ros.nodes.sim_loader", "--ros-args", "-p", "clock_wait_s:=0.1"],
                  env=env)
    simulator = Proc([sys.executable, str(PEERS / "silent_first_world.py")], env=env)
    try:
        lines = simulator.wait_for("RESULT", timeout=90)
        loader.wait_for("\0", timeout=0.5)  # what it said meanwhile
    finally:
        simulator.stop()
        loader.stop()
    assert lines, simulator.seen[-20:] + loader.seen[-20:]
    out = json.loads(lines[0].removeprefix("RESULT "))
    assert out["success"] and out["loads"] == 2, (out, loader.seen[-20:])
    assert any("no answer from /load_world yet; asking again" in line for line in loader.seen), loader.seen[-20:]


def test_the_balance_holds_its_readings_after_a_tare_until_its_writer_matched_every_reader(env):
    """A reader of /balance/reading that the balance's writer can never match (another type):
    after the tare the readings wait match_timeout_s (1 s here), then go out, all of them,
    with a warning naming the topic."""
    balance = Proc([sys.executable, "-m", "labference_ros.nodes.balance", "--ros-args", "-p", "match_timeout_s:=1.0"],
                   env=env)
    other = Proc([sys.executable, "-c", OTHER_TYPE_READER], env=env)
    probe = Proc([sys.executable, str(PEERS / "balance_match_probe.py")], env=env)
    try:
        lines = probe.wait_for("RESULT", timeout=90)
        balance.wait_for("\0", timeout=0.5)  # what it said meanwhile
    finally:
        probe.stop()
        other.stop()
        balance.stop()
    assert lines, probe.seen[-20:] + balance.seen[-20:]
    out = json.loads(lines[0].removeprefix("RESULT "))
    assert out["readings"] == 20 and out["first_after_s"] >= 0.9, (out, balance.seen[-10:])
    assert any("publishing before matching the subscriptions of /balance/reading" in line
               for line in balance.seen), balance.seen[-10:]
