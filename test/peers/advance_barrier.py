"""Asks lab_sim for advances whose commands arrive at different times, one line each,
"RESULT <ok> <seconds waited> <message>":
1. the boundary's gripper command is sent 1 s after the request: the advance waits for it;
2. its arm command never comes: refused once lab_sim's command_wait_s has passed;
3. its gripper command was sent before the request: served;
4. its arm command never comes; meanwhile a second advance is refused (one runs at a
   time) and the scene is reset, which ends the wait."""
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
    reset = ResetEpisode.Request(instance_json=instance.to_json())
    assert peer.call(ResetEpisode, "/lab_sim/reset", reset).success
    deadline = time.monotonic() + 30
    while node.count_subscribers("/panda_gripper/command") == 0 and time.monotonic() < deadline:
        time.sleep(0.01)

    def send_gripper(t: float) -> None:
        cmd = GripperCommand(width=0.06, speed=0.1)
        s_to_stamp(t, cmd.header.stamp)
        grip.publish(cmd)

    def timed_advance(t: float, meanwhile=None, **needs) -> float:
        req = Advance.Request(duration_s=0.1, **needs)
        s_to_stamp(t, req.command_stamp)
        start = time.monotonic()
        pending = advance.call_async(req)
        if meanwhile is not None:
            time.sleep(1.0)  # the request is now waiting inside lab_sim
            meanwhile()
        res = peer.wait(pending, 30)
        waited = time.monotonic() - start
        print(f"RESULT {bool(res and res.success)} {waited:.2f} {res.message if res else 'no reply'}", flush=True)
        return res.sim_time if res else 0.0

    t = timed_advance(0.0, lambda: send_gripper(0.0), require_gripper_command=True)
    timed_advance(t, require_arm_command=True)
    send_gripper(t)
    time.sleep(0.5)  # delivered before the request
    timed_advance(t, require_gripper_command=True)

    def second_advance_then_reset():
        timed_advance(t, require_arm_command=True)
        peer.call(ResetEpisode, "/lab_sim/reset", reset)

    timed_advance(t, second_advance_then_reset, require_arm_command=True)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
