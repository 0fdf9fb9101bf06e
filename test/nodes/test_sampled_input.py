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
rclpy.shutdown()
"""


def test_a_sampled_input_gives_the_newest_message_once_and_none_until_another_arrives():
    out = subprocess.run([sys.executable, "-c", PROBE], env=loopback_environ(), capture_output=True, text=True,
                         timeout=90)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("TAKEN "))
    # Nothing yet; of 25 (more than the depth) the newest; nothing new; the next one.
    assert json.loads(line[len("TAKEN "):]) == [None, 25, None, 26]
