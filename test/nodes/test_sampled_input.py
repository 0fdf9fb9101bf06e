"""nodes.sampled.SampledInput: a subscription no executor spins, taken when used."""
from __future__ import annotations

import json
import subprocess
import sys

from labference_ros.rosenv import loopback_environ

# One process, two nodes: a publisher and a reader that nothing spins. Fast DDS hands a
# sample to a reader of the same participant within the write, so each take below
# sees exactly what was published before it.
PROBE = """
import json, time
from rclpy.qos import QoSProfile
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from labference_ros.nodes.runtime import init_ros
from labference_ros.nodes.sampled import SampledInput

rclpy = init_ros([])
writer = rclpy.create_node("sampled_probe_writer")
reader = rclpy.create_node("sampled_probe_reader")
pub = writer.create_publisher(JointState, "/sampled_probe", QoSProfile(depth=10))
source = SampledInput(reader, JointState, "/sampled_probe", QoSProfile(depth=10))
deadline = time.monotonic() + 30
while (pub.get_subscription_count() < 1 or source.subscription.get_publisher_count() < 1) \\
        and time.monotonic() < deadline:
    time.sleep(0.01)

def publish(first, last):
    for sec in range(first, last + 1):
        msg = JointState(name=["j"], position=[float(sec)])
        msg.header.stamp.sec = sec
        pub.publish(msg)

def take():
    data = source.newest()
    return None if data is None else deserialize_message(data, JointState).header.stamp.sec

taken = [take()]
publish(1, 25)
time.sleep(0.5)
taken += [take(), take()]
publish(26, 26)
time.sleep(0.5)
taken.append(take())
print("TAKEN " + json.dumps(taken))

# take_all: messages (raw=False), oldest first, the newest `depth` of them, with their
# publication times; the reader node as reader_node names it.
from labference_ros.nodes.sampled import reader_node
second = reader_node(writer)
messages = SampledInput(second, JointState, "/sampled_probe", QoSProfile(depth=10), raw=False)
while messages.subscription.get_publisher_count() < 1 and time.monotonic() < deadline + 30:
    time.sleep(0.01)
before = time.time_ns()
publish(27, 40)
time.sleep(0.5)
with_info = messages.take_all_with_info()
print("ALL " + json.dumps({"stamps": [m.header.stamp.sec for m, _info in with_info],
                           "published_in_order": all(before <= a["source_timestamp"] <= b["source_timestamp"]
                                                     for (_m, a), (_n, b) in zip(with_info, with_info[1:])),
                           "after_take": messages.take_all(), "name": second.get_name()}))
rclpy.shutdown()
"""


def test_a_sampled_input_gives_the_newest_message_once_and_all_of_them_in_order():
    out = subprocess.run([sys.executable, "-c", PROBE], env=loopback_environ(), capture_output=True, text=True,
                         timeout=90)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("TAKEN "))
    # Nothing yet; of 25 (more than the depth) the newest; nothing new; the next one.
    assert json.loads(line[len("TAKEN "):]) == [None, 25, None, 26]
    line = next(x for x in out.stdout.splitlines() if x.startswith("ALL "))
    assert json.loads(line[len("ALL "):]) == {"stamps": list(range(31, 41)), "published_in_order": True,
                                              "after_take": [], "name": "sampled_probe_writer_inputs"}
