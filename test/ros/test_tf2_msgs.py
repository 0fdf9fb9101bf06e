"""tf2_msgs built into the embedded environment has the distribution's type hash."""
from __future__ import annotations

import subprocess
import sys

from rosbags.typesys import Stores, get_typestore

from labference_ros.rosenv import loopback_environ

# What the middleware announces for a TFMessage publisher (the hash rclpy's type support carries).
PROBE = """
from labference_ros.nodes.runtime import init_ros
from tf2_msgs.msg import TFMessage
rclpy = init_ros([])
node = rclpy.create_node("tf2_hash_probe")
node.create_publisher(TFMessage, "/tf2_hash_probe", 1)
print(node.get_publishers_info_by_topic("/tf2_hash_probe")[0].topic_type_hash)
"""


def test_tfmessage_type_hash_equals_the_kilted_distributions():
    expected = get_typestore(Stores.ROS2_KILTED).hash_rihs01("tf2_msgs/msg/TFMessage")
    out = subprocess.run([sys.executable, "-c", PROBE], env=loopback_environ(), capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == expected
