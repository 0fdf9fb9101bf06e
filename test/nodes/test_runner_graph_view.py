"""The episode runner's wait for the graph names what it misses, side by side: a topic
without a publisher, without a subscriber, or without either."""
from __future__ import annotations

import json
import subprocess
import sys

from labference_ros.rosenv import loopback_environ

# One process: the runner's node and a peer node that publishes one of the topics the
# runner waits for and subscribes to another. Endpoints of the same participant are in
# its view of the graph at once, so nothing else needs to be up.
PROBE = """
import json
from labference.msg import DeliveryReceipt, WorldState
from rclpy.qos import QoSProfile
from labference_ros.nodes.episode_runner import make_node
from labference_ros.nodes.runtime import init_ros

rclpy = init_ros([])
runner = make_node()
peer = rclpy.create_node("graph_view_peer")
peer.create_publisher(DeliveryReceipt, "/policy/receipts", QoSProfile(depth=1))
peer.create_subscription(WorldState, "/evaluator/world_state", lambda _m: None, QoSProfile(depth=1))
missing = runner.graph_missing()
print("MISSING " + json.dumps([m for m in missing if m.startswith("/")]))
"""


def test_the_graph_wait_names_the_side_each_topic_lacks(tmp_path):
    env = loopback_environ()
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("MISSING ")), None)
    assert line is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
    missing = json.loads(line[len("MISSING "):])
    assert "/policy/receipts (no subscriber)" in missing, missing
    assert "/evaluator/world_state (no publisher)" in missing, missing
    assert "/referee/receipts (no publisher and no subscriber)" in missing, missing
    assert not any(m.startswith("/joint_states") for m in missing), missing  # sync mode: from the advance answers
