"""Runs one episode through policy_bridge: resets lab_sim, starts the referee
and the bridge, waits for the bridge's status to leave "running", finishes
the referee and prints "RESULT <json>".
usage: bridge_episode.py OUTPUT_DIR INSTANCE_INDEX"""
from __future__ import annotations

import json
import sys
import threading
import time

from labference_ros.nodes.runtime import init_ros


def main() -> int:
    out_dir, index = sys.argv[1], int(sys.argv[2])
    rclpy = init_ros([])
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from std_msgs.msg import String

    from labference.srv import FinishEpisode, ResetEpisode, StartEpisode
    from labference_ros.core.instances import generate

    node = rclpy.create_node("bridge_episode")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()
    status = {}
    node.create_subscription(String, "/policy_bridge/status", lambda m: status.update(json.loads(m.data)),
                             QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL))

    def call(srv_type, name, request, timeout=120.0):
        client = node.create_client(srv_type, name)
        if not client.wait_for_service(timeout_sec=timeout):
            raise RuntimeError(f"service {name} not available")
        future = client.call_async(request)
        deadline = time.monotonic() + timeout
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.002)
        return future.result()

    instance = generate("basic", index + 1, task_seed=1, layout_seed=100, policy_seed=0)[index]
    res = call(ResetEpisode, "/lab_sim/reset", ResetEpisode.Request(episode_id="ep0", instance_json=instance.to_json()))
    assert res.success, res.message
    res = call(StartEpisode, "/referee/start_episode", StartEpisode.Request(
        episode_id="ep0", instance_json=instance.to_json(), output_dir=out_dir, run_json="{}"))
    assert res.success, res.message
    res = call(StartEpisode, "/policy_bridge/start_episode", StartEpisode.Request(
        episode_id="ep0", instance_json=instance.to_json(), output_dir=out_dir, run_json="{}"))
    assert res.success, res.message
    profile = json.loads(res.message)["policy"]
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline and not (status.get("episode_id") == "ep0"
                                               and status.get("state") in ("done", "error")):
        time.sleep(0.05)
    res = call(FinishEpisode, "/referee/finish_episode", FinishEpisode.Request(
        episode_id="ep0", reason="completed", sim_time=0.0))
    print("RESULT " + json.dumps({"status": status, "profile": profile, "goal_set": instance.goal_set,
                                  "scores": json.loads(res.scores_json or "{}")}), flush=True)
    executor.shutdown()
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
