"""Nodes wait, at an episode's start, only for publishers they can match:
DDS never matches a best-effort offer with a reliable request, nor a volatile
offer with a transient-local one, so waiting for those would always time out.
A writer whose first sample of an episode goes out once (lab_sim's frames) waits
for its own matching of every reader the graph announces: the reader's side
having matched is not enough."""
from __future__ import annotations

import sys
from types import SimpleNamespace

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosproc import Proc

from labference_ros.nodes.matching import qos_compatible, unmatched_readers


def qos(reliability, durability):
    return QoSProfile(depth=1, reliability=reliability, durability=durability)


RELIABLE, BEST_EFFORT = ReliabilityPolicy.RELIABLE, ReliabilityPolicy.BEST_EFFORT
VOLATILE, LATCHED = DurabilityPolicy.VOLATILE, DurabilityPolicy.TRANSIENT_LOCAL


def test_matching_offers_are_waited_for():
    assert qos_compatible(qos(RELIABLE, VOLATILE), qos(RELIABLE, VOLATILE))
    assert qos_compatible(qos(RELIABLE, LATCHED), qos(RELIABLE, VOLATILE))
    assert qos_compatible(qos(RELIABLE, LATCHED), qos(BEST_EFFORT, LATCHED))
    assert qos_compatible(qos(BEST_EFFORT, VOLATILE), qos(BEST_EFFORT, VOLATILE))


def test_offers_dds_never_matches_are_not_waited_for():
    assert not qos_compatible(qos(BEST_EFFORT, VOLATILE), qos(RELIABLE, VOLATILE))
    assert not qos_compatible(qos(RELIABLE, VOLATILE), qos(RELIABLE, LATCHED))
    assert not qos_compatible(qos(BEST_EFFORT, LATCHED), qos(RELIABLE, LATCHED))


class StandInPublisher:
    def __init__(self, topic, offered, matched):
        self.topic_name, self.qos_profile, self.matched = topic, offered, matched

    def get_subscription_count(self):
        return self.matched


class StandInGraph:
    """The two rclpy graph queries matching.unmatched_readers asks."""

    def __init__(self, requests):
        self.requests = requests

    def get_subscriptions_info_by_topic(self, topic):
        return [SimpleNamespace(qos_profile=r) for r in self.requests.get(topic, [])]


def test_a_writer_waits_for_each_compatible_reader_the_graph_announces():
    graph = StandInGraph({"/frames": [qos(RELIABLE, VOLATILE), qos(BEST_EFFORT, VOLATILE),
                                      qos(RELIABLE, LATCHED)]})  # the latched request never matches
    offered = qos(RELIABLE, VOLATILE)
    assert unmatched_readers(graph, {"frames": StandInPublisher("/frames", offered, 1)}) == ["frames"]
    assert unmatched_readers(graph, {"frames": StandInPublisher("/frames", offered, 2)}) == []
    assert unmatched_readers(graph, {"none": StandInPublisher("/none", offered, 0)}) == []


# A writer process with one publisher per topic, volatile and reliable as lab_sim's
# cameras, then a reader process subscribing to them all. As soon as its graph shows
# the reader on a topic, the writer sends one message there (lab_sim's first frame of
# an episode goes out once). The graph (ROS discovery information) and the writer's
# matching of the reader (DDS endpoint discovery) arrive on separate ways: only the
# matching tells that a sample written now will reach the reader.
TOPICS = 12
WRITER = f"""
import sys, time
from rclpy.qos import QoSProfile
from std_msgs.msg import String
from labference_ros.nodes.matching import unmatched_readers
from labference_ros.nodes.runtime import init_ros
rclpy = init_ros([])
node = rclpy.create_node("first_sample_writer")
publishers = {{f"/first_sample_{{i}}": node.create_publisher(String, f"/first_sample_{{i}}", QoSProfile(depth=10))
              for i in range({TOPICS})}}
print("READY", flush=True)
wait = sys.argv[1] == "await"
pending = []
deadline = time.monotonic() + 60
for i, (topic, pub) in enumerate(publishers.items()):
    while node.count_subscribers(topic) < 1 and time.monotonic() < deadline:
        time.sleep(0.001)
    while wait and unmatched_readers(node, {{topic: pub}}) and time.monotonic() < deadline:
        time.sleep(0.001)
    if wait:
        pending += unmatched_readers(node, {{topic: pub}})
    pub.publish(String(data=str(i)))
print("PENDING", pending, flush=True)
time.sleep(5)
"""
READER = f"""
import time
from rclpy.qos import QoSProfile
from std_msgs.msg import String
from labference_ros.nodes.runtime import init_ros
rclpy = init_ros([])
node = rclpy.create_node("first_sample_reader")
got = set()
for i in range({TOPICS}):
    node.create_subscription(String, f"/first_sample_{{i}}", lambda m: got.add(int(m.data)), QoSProfile(depth=10))
deadline = time.monotonic() + 30
while len(got) < {TOPICS} and time.monotonic() < deadline:
    rclpy.spin_once(node, timeout_sec=0.1)
print("GOT", sorted(got), flush=True)
"""


def first_samples(mode: str) -> tuple[list[str], list[str]]:
    writer = Proc([sys.executable, "-c", WRITER, mode])
    reader = None
    try:
        assert writer.wait_for("READY", timeout=60), writer.seen
        reader = Proc([sys.executable, "-c", READER])
        pending = writer.wait_for("PENDING", timeout=120)
        got = reader.wait_for("GOT", timeout=120)
    finally:
        writer.stop()
        if reader is not None:
            reader.stop()
    return pending, got


def test_a_sample_written_once_the_writer_matched_every_reader_its_graph_announces_reaches_it():
    pending, got = first_samples("await")
    assert pending == ["PENDING []"]
    assert got == [f"GOT {list(range(TOPICS))}"]
