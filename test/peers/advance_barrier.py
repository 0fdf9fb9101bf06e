"""Asks lab_sim to advance before the boundary's gripper command exists, then sends
the command: the advance must wait for it and then succeed. Prints "RESULT <ok> <message>"."""
from __future__ import annotations

import sys
import threading
import time

from labference_ros.nodes.runtime import init_ros


def main() -> int:
    rclpy = init_ros([])
    from rclpy.executors import SingleThreadedExecutor

    from labference.msg import GripperCommand
    from labference.srv import Advance, ResetEpisode
    from labference_ros.core.instances import generate
    from labference_ros.msgconv import s_to_stamp

    node = rclpy.create_node("advance_barrier")
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    threading.Thread(target=ex.spin, daemon=True).start()
    grip = node.create_publisher(GripperCommand, "/panda_gripper/command", 10)

    def wait(fut, timeout):
        deadline = time.monotonic() + timeout
        while not fut.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        return fut.result() if fut.done() else None

    reset = node.create_client(ResetEpisode, "/lab_sim/reset")
    advance = node.create_client(Advance, "/lab_sim/advance")
    assert reset.wait_for_service(timeout_sec=60) and advance.wait_for_service(timeout_sec=60)
    instance = generate("basic", 1, task_seed=0, layout_seed=0, policy_seed=0)[0]
    assert wait(reset.call_async(ResetEpisode.Request(instance_json=instance.to_json())), 60).success
    deadline = time.monotonic() + 30
    while node.count_subscribers("/panda_gripper/command") == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    req = Advance.Request(duration_s=0.1, require_gripper_command=True)
    s_to_stamp(0.0, req.command_stamp)
    pending = advance.call_async(req)
    time.sleep(1.0)  # the request is now waiting inside lab_sim
    cmd = GripperCommand(width=0.06, speed=0.1)
    s_to_stamp(0.0, cmd.header.stamp)
    grip.publish(cmd)
    res = wait(pending, 20)
    print(f"RESULT {bool(res and res.success)} {res.message if res else 'no reply'}", flush=True)
    ex.shutdown()
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
