"""A privileged test driver for the lab_sim + balance + referee graph.

Resets an instance, starts the referee, transfers one standard with the scripted
planner through the JointTrajectory + gripper topics and sync-mode advance, then
finishes and prints "SCORES <json>". Modes: correct | wrong | drop.
usage: weighing_driver.py MODE OUTPUT_DIR [TASK_SEED] [--record] [--episode ID]
--record: also start/finish the episode on /recorder (bag in OUTPUT_DIR/bag).
"""
from __future__ import annotations

import json
import sys
import time

from peer_session import PeerSession


def main() -> int:
    argv = sys.argv[1:]
    record = "--record" in argv
    argv = [a for a in argv if a != "--record"]
    episode_id = "ep0"
    if "--episode" in argv:
        i = argv.index("--episode")
        episode_id = argv[i + 1]
        del argv[i:i + 2]
    mode, out_dir = argv[0], argv[1]
    task_seed = int(argv[2]) if len(argv) > 2 else 3
    peer = PeerSession("weighing_driver")
    from builtin_interfaces.msg import Duration
    from labference.msg import GripperCommand, ScoreSnapshot, WorldState
    from labference.srv import Advance, FinishEpisode, ResetEpisode, StartEpisode
    from rclpy.qos import QoSProfile
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from labference_ros.msgconv import s_to_stamp, world_from_msg
    from labference_ros.sim.backend import ARM_JOINT_NAMES
    from labference_ros.skills.motion import PickPlacePlanner
    from labference_ros.tasks.weighing.moves import plan_to_pan
    from labference_ros.tasks.weighing.instances import generate
    from labference_ros.tasks.weighing.objects import STANDARDS

    node, call = peer.node, peer.call
    latest = {}
    node.create_subscription(WorldState, "/evaluator/world_state", lambda m: latest.update(world=m), QoSProfile(depth=5))
    node.create_subscription(ScoreSnapshot, "/referee/scores", lambda m: latest.update(score=m), QoSProfile(depth=5))
    traj_pub = node.create_publisher(JointTrajectory, "/panda_arm_controller/joint_trajectory", 10)
    grip_pub = node.create_publisher(GripperCommand, "/panda_gripper/command", 10)

    sim_t = [0.0]

    def advance(duration, arm=False, gripper=False, stamp_t=None):
        req = Advance.Request(duration_s=duration, require_arm_command=arm, require_gripper_command=gripper)
        s_to_stamp(sim_t[0] if stamp_t is None else stamp_t, req.command_stamp)
        res = call(Advance, "/lab_sim/advance", req)
        assert res.success, res.message
        sim_t[0] = res.sim_time

    instance = generate("basic", 1, task_seed=task_seed, layout_seed=task_seed, policy_seed=0)[0]
    required = instance.goal_set[0]
    chosen = required if mode in ("correct", "drop") else next(s for s in STANDARDS if s != required)
    run_json = json.dumps({"policy": {"name": f"test_driver_{mode}", "privileged": True}})
    if record:
        # The recorder starts before the reset so the bag holds the whole episode.
        res = call(StartEpisode, "/recorder/start_episode", StartEpisode.Request(
            episode_id=episode_id, instance_json=instance.to_json(), output_dir=out_dir, run_json=run_json))
        assert res.success, res.message
    res = call(ResetEpisode, "/lab_sim/reset", ResetEpisode.Request(episode_id=episode_id,
                                                                    instance_json=instance.to_json()))
    assert res.success, res.message
    res = call(StartEpisode, "/referee/start_episode", StartEpisode.Request(
        episode_id=episode_id, instance_json=instance.to_json(), output_dir=out_dir, run_json=run_json))
    assert res.success, res.message
    # Let the reading settle (readiness), and the policy "see" it.
    latest.pop("world", None)
    advance(2.0)
    deadline = time.monotonic() + 30
    while "world" not in latest and time.monotonic() < deadline:
        time.sleep(0.01)
    world = world_from_msg(latest["world"])
    from labference.msg import DeliveryReceipt
    from rclpy.qos import DurabilityPolicy
    # The referee takes deliveries latched (transient local), as the policy bridge sends them.
    receipt_pub = node.create_publisher(DeliveryReceipt, "/policy/receipts",
                                        QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    deadline = time.monotonic() + 30
    while node.count_subscribers("/policy/receipts") < (2 if record else 1) and time.monotonic() < deadline:
        time.sleep(0.01)
    receipt = DeliveryReceipt(episode_id=episode_id, receipt_id="r1", kind="observation", payload_id="obs-1",
                              status="delivered")
    s_to_stamp(sim_t[0], receipt.header.stamp)
    # The referee echoes each delivery (latched); the motion starts only once it has
    # the delivery, or the opportunity would open after the choice was made.
    echoes = {}
    node.create_subscription(DeliveryReceipt, "/referee/receipts",
                             lambda m: m.episode_id == episode_id and echoes.update({m.payload_id: m}),
                             QoSProfile(depth=50, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    if record:
        from labference.msg import ActionChunk
        chunk_pub = node.create_publisher(ActionChunk, "/policy/action_chunks", 10)
        deadline = time.monotonic() + 30
        while node.count_subscribers("/policy/action_chunks") < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
    receipt_pub.publish(receipt)

    planner = PickPlacePlanner()
    from sensor_msgs.msg import JointState
    joints = {}
    node.create_subscription(JointState, "/joint_states", lambda m: joints.update(js=m), 10)
    advance(0.01)
    deadline = time.monotonic() + 30
    while "js" not in joints and time.monotonic() < deadline:
        advance(0.01)
    arm_q = list(joints["js"].position[:7])
    obj = world.objects[chosen]
    deadline = time.monotonic() + 30
    while "obs-1" not in echoes and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "obs-1" in echoes, "the referee never echoed the delivery"
    plan = plan_to_pan(planner, arm_q, chosen, obj.position, instance.layout["balance"])
    t0 = sim_t[0]
    traj = JointTrajectory(joint_names=list(ARM_JOINT_NAMES))
    s_to_stamp(t0, traj.header.stamp)
    for i, q in enumerate(plan.arm_q):
        ns = int(round((i + 1) * plan.dt * 1e9))
        traj.points.append(JointTrajectoryPoint(positions=[float(x) for x in q],
                                                time_from_start=Duration(sec=ns // 10**9, nanosec=ns % 10**9)))
    traj_pub.publish(traj)
    if record:
        # The applied plan as the action chunk of the delivered observation, bound to
        # the evidence version the referee echoed for it (audited from the bag).
        chunk = ActionChunk(episode_id=episode_id, chunk_id="c1", observation_id="obs-1",
                            evidence_version=echoes["obs-1"].evidence_version, representation="joint",
                            mode="absolute", frame="panda_link0", dim=7, length=len(plan.arm_q),
                            control_frequency_hz=1.0 / plan.dt,
                            data=[float(x) for q in plan.arm_q for x in q])
        s_to_stamp(t0, chunk.header.stamp)
        chunk_pub.publish(chunk)
    events = sorted(plan.gripper_events, key=lambda e: e.t)
    if mode == "drop":
        # Open the hand half-way through the transfer phase.
        transfer = dict((label, t) for t, label in plan.labels)["transfer"]
        events = [e for e in events if e.t <= transfer] + [type(events[0])(transfer + 0.6, 0.08)]
    first = True
    for e in events:
        if e.t + t0 > sim_t[0] + 1e-9:
            advance(e.t + t0 - sim_t[0], arm=first, stamp_t=t0)
            first = False
        cmd = GripperCommand(grasp=e.grasp, width=e.width, speed=e.speed, force=e.force,
                             epsilon_inner=e.epsilon_inner, epsilon_outer=e.epsilon_outer)
        s_to_stamp(sim_t[0], cmd.header.stamp)
        grip_pub.publish(cmd)
        advance(0.0, arm=first, gripper=True)
        first = False
    end = plan.duration + t0 + 6.0
    while sim_t[0] < end - 1e-9:
        advance(min(5.0, end - sim_t[0]))
    res = call(FinishEpisode, "/referee/finish_episode", FinishEpisode.Request(
        episode_id=episode_id, reason="completed", sim_time=sim_t[0]))
    if record:
        rec = call(FinishEpisode, "/recorder/finish_episode", FinishEpisode.Request(
            episode_id=episode_id, reason="completed", sim_time=sim_t[0]), timeout=120.0)
        assert rec.success, rec.message
    print("SCORES " + json.dumps({"required": required, "chosen": chosen, "scores": json.loads(res.scores_json)}),
          flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
