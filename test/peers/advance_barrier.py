"""Asks lab_sim for advances whose commands arrive at different times, one line each,
"RESULT <ok> <seconds waited> <message>":
1. the boundary's gripper command is sent 1 s after the request: the advance waits for it;
2. its arm command never comes: refused once lab_sim's command_wait_s has passed;
3. its gripper command was sent before the request: served;
4. its arm command never comes; meanwhile a second advance is asked (it waits for the
   first), a third is refused (one waits at a time) and the scene is reset, which ends
   the first's wait and the second's: printed third, second, first;
5. "AHEAD <same> <sim time>": the same two arm commands and intervals, once each command
   and advance sent after the previous answer and once all sent at once (the second
   command, stamped at the first interval's end, reaches lab_sim while or before that
   interval runs): the arm's joint state after them is the same to the bit;
6. "STALE <ok> <message>": an advance whose command_stamp is ahead of sim time;
7. "ANSWER <joints same> <world same> <world withheld> <stamp>": the last answer of 5
   carries the joint state and the world state lab_sim published last, at the answer's
   sim time; the first, which did not ask for the world state, carries none;
8. "ROWS <same> <sim time>": three commands (5's two and a third), once each command and
   advance sent after the previous answer, once all three sent first and then one advance
   over the three intervals that names their boundaries (lab_sim holds two commands at
   once): the arm's joint state after them is the same to the bit;
9. "OUTSIDE <ok> <message>": an advance naming a command boundary past its interval."""
from __future__ import annotations

import sys
import time

from peer_session import PeerSession


def main() -> int:
    peer = PeerSession("advance_barrier")
    from builtin_interfaces.msg import Duration, Time
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from labference.msg import GripperCommand, WorldState
    from labference.srv import Advance, ResetEpisode

    from labference_ros.msgconv import s_to_stamp
    from labference_ros.tasks.weighing.instances import generate

    node = peer.node
    grip = node.create_publisher(GripperCommand, "/panda_gripper/command", 10)
    arm = node.create_publisher(JointTrajectory, "/panda_arm_controller/joint_trajectory", 10)
    joints: list = []
    node.create_subscription(JointState, "/joint_states", joints.append, 100)
    worlds: list = []  # serialized, as published
    node.create_subscription(WorldState, "/evaluator/world_state", worlds.append, 100, raw=True)

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

    def queue_then_reset():
        req = Advance.Request(duration_s=0.1, require_arm_command=True)
        s_to_stamp(t, req.command_stamp)
        start = time.monotonic()
        second = advance.call_async(req)
        time.sleep(0.5)  # the second now waits for the first
        timed_advance(t, require_arm_command=True)
        peer.call(ResetEpisode, "/lab_sim/reset", reset)
        res = peer.wait(second, 30)
        print(f"RESULT {bool(res and res.success)} {time.monotonic() - start:.2f} "
              f"{res.message if res else 'no reply'}", flush=True)

    timed_advance(t, queue_then_reset, require_arm_command=True)

    # 5. Commands sent one interval ahead act at their stamp.
    names = [f"panda_joint{i}" for i in range(1, 8)]
    home = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
    targets = [[q + 0.05 for q in home], [q + 0.15 for q in home]]

    def command(k: int) -> None:
        msg = JointTrajectory(joint_names=names)
        s_to_stamp(0.1 * k, msg.header.stamp)
        msg.points.append(JointTrajectoryPoint(positions=targets[k], time_from_start=Duration(nanosec=100_000_000)))
        arm.publish(msg)

    def interval(k: int):
        req = Advance.Request(duration_s=0.1, require_arm_command=True, include_world_state=k == 1)
        s_to_stamp(0.1 * k, req.command_stamp)
        return advance.call_async(req)

    def final_joints(all_at_once: bool):
        assert peer.call(ResetEpisode, "/lab_sim/reset", reset).success
        if all_at_once:
            command(0)
            first = interval(0)
            command(1)
            second = interval(1)
            answers = [peer.wait(first, 30), peer.wait(second, 30)]
        else:
            answers = []
            for k in (0, 1):
                command(k)
                answers.append(peer.wait(interval(k), 30))
        assert all(a is not None and a.success for a in answers), answers
        time.sleep(0.5)  # the last joint state arrives
        last = joints[-1]
        return answers[-1].sim_time, tuple(last.position), last.header.stamp, answers, worlds[-1]

    step_by_step = final_joints(False)
    ahead = final_joints(True)
    print(f"AHEAD {step_by_step[1] == ahead[1] and step_by_step[2] == ahead[2]} {ahead[0]:.3f}", flush=True)
    # 6. An advance naming a boundary sim time has not reached (asked before a reset) is refused.
    stale = Advance.Request(duration_s=0.1)
    s_to_stamp(ahead[0] + 0.1, stale.command_stamp)
    res = peer.wait(advance.call_async(stale), 30)
    print(f"STALE {bool(res and res.success)} {res.message if res else 'no reply'}", flush=True)
    # 7. The answer carries the state published at its end.
    (first, answer), world = ahead[3], ahead[4]
    withheld = len(first.joint_state.name) > 0 and len(first.world_state) == 0
    same_joints = tuple(answer.joint_state.position) == ahead[1] and answer.joint_state.header.stamp == ahead[2]
    stamp = answer.joint_state.header.stamp
    # The transport pads what it delivers to a multiple of four bytes: compare the messages.
    same_world = deserialize_message(answer.world_state.tobytes(), WorldState) == deserialize_message(world, WorldState)
    print(f"ANSWER {same_joints} {same_world} {withheld} {stamp.sec + stamp.nanosec * 1e-9:.3f}", flush=True)
    # 8. Three rows one at a time, then all three first and one advance over them.
    targets.append([q - 0.05 for q in home])
    assert peer.call(ResetEpisode, "/lab_sim/reset", reset).success
    for k in (0, 1, 2):
        command(k)
        assert peer.wait(interval(k), 30).success
    time.sleep(0.5)  # the last joint state arrives
    one_at_a_time = (tuple(joints[-1].position), joints[-1].header.stamp)
    assert peer.call(ResetEpisode, "/lab_sim/reset", reset).success
    for k in (0, 1, 2):
        command(k)
    rows = Advance.Request(duration_s=0.3)
    s_to_stamp(0.0, rows.command_stamp)
    rows.arm_command_stamps = [s_to_stamp(0.1 * k, Time()) for k in (0, 1, 2)]
    res = peer.wait(advance.call_async(rows), 30)
    time.sleep(0.5)
    same = bool(res and res.success) and (tuple(joints[-1].position), joints[-1].header.stamp) == one_at_a_time
    print(f"ROWS {same} {res.sim_time if res else 0.0:.3f}", flush=True)
    # 9. A command boundary outside the interval.
    outside = Advance.Request(duration_s=0.1)
    s_to_stamp(res.sim_time, outside.command_stamp)
    outside.arm_command_stamps = [s_to_stamp(res.sim_time + 0.1, Time())]
    res = peer.wait(advance.call_async(outside), 30)
    print(f"OUTSIDE {bool(res and res.success)} {res.message if res else 'no reply'}", flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
