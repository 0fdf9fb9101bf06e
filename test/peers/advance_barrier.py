"""Asks lab_sim to advance before the boundary's gripper command exists, then sends
the command: the advance must wait for it and then succeed. Then asks for an advance
whose arm command never comes (refused once lab_sim's command_wait_s has passed), and
one more whose command is already there (served at once). Prints one line per advance:
"RESULT <ok> <seconds waited> <message>"."""
from __future__ import annotations

import sys
import time

from peer_session import PeerSession


def main() -> int:
    peer = PeerSession("advance_barrier")
    from labference.msg import GripperCommand
    from labference.srv import Advance, ResetEpisode

    from labference_ros.msgconv import s_to_stamp
    from labference_ros.tasks.weighing.instances import generate

    node = peer.node
    grip = node.create_publisher(GripperCommand, "/panda_gripper/command", 10)

    advance = peer.client(Advance, "/lab_sim/advance")
    instance = generate("basic", 1, task_seed=0, layout_seed=0, policy_seed=0)[0]
    assert peer.call(ResetEpisode, "/lab_sim/reset", ResetEpisode.Request(instance_json=instance.to_json())).success
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
    res = peer.wait(pending, 20)
    print(f"RESULT {bool(res and res.success)} {res.message if res else 'no reply'}", flush=True)
    t = res.sim_time if res else 0.0

    def timed_advance(req):
        start = time.monotonic()
        res = peer.wait(advance.call_async(req), 30)
        waited = time.monotonic() - start
        print(f"RESULT {bool(res and res.success)} {waited:.2f} {res.message if res else 'no reply'}", flush=True)

    never = Advance.Request(duration_s=0.1, require_arm_command=True)
    s_to_stamp(t, never.command_stamp)
    timed_advance(never)
    cmd = GripperCommand(width=0.06, speed=0.1)
    s_to_stamp(t, cmd.header.stamp)
    grip.publish(cmd)
    time.sleep(0.5)  # delivered before the request
    ready = Advance.Request(duration_s=0.1, require_gripper_command=True)
    s_to_stamp(t, ready.command_stamp)
    timed_advance(ready)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
