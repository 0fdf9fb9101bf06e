"""Starts an episode on a lone policy_bridge and prints what it answered:
"PROBE <json>" with the start reply, the status and the bridge's subscriptions.
usage: bridge_probe.py"""
from __future__ import annotations

import json
import sys
import threading
import time

from labference_ros.nodes.runtime import init_ros


def main() -> int:
    rclpy = init_ros([])
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from std_msgs.msg import String

    from labference.srv import StartEpisode
    from labference_ros.core.instances import generate

    node = rclpy.create_node("bridge_probe")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()
    status = {}
    node.create_subscription(String, "/policy_bridge/status", lambda m: status.update(json.loads(m.data)),
                             QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    client = node.create_client(StartEpisode, "/policy_bridge/start_episode")
    assert client.wait_for_service(timeout_sec=60)
    instance = generate("basic", 1, task_seed=1, layout_seed=100, policy_seed=0)[0]
    fut = client.call_async(StartEpisode.Request(episode_id="ep0", instance_json=instance.to_json()))
    while not fut.done():
        time.sleep(0.01)
    deadline = time.monotonic() + 10
    while not status and time.monotonic() < deadline:
        time.sleep(0.01)
    subs = {t: node.count_subscribers(t) for t in ("/joint_states", "/evaluator/world_state")}
    print("PROBE " + json.dumps({"success": fut.result().success, "message": fut.result().message,
                                 "status": status, "subscribers": subs}), flush=True)
    executor.shutdown()
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
