"""Plays a real cell's sensors for the world_estimator node and checks what it answers.

Publishes joint states (the arm at home, the hand open), an open-gripper command,
marker detections and stable balance readings, all stamped with the wall clock as
a real cell's drivers do, and calls the scene check /world_estimator/reset:
  1. before any marker is seen: refused;
  2. with every object's marker where the instance puts it: accepted;
  3. then, for readings that the markers explain (the sample alone on the pan,
     unchanged), world states with the sample on the pan, every standard on the
     table, and valid checked readings;
  4. a stable reading 17 g heavier while no tracked standard moved: the checked
     reading is invalid and names the estimator;
  5. std_10's marker 5 cm from its start: the scene check refuses, naming std_10;
  6. no reading for 1.6 s: invalid checked readings that say the balance is silent.
With the argument `balance` (the estimator run with balance_marker:=true), the scene
check instead with every object in place and the balance's marker: not seen, 3 cm from
the instance's balance, then 4 mm from it.
With the argument `lag` (a reader that fell behind), after the set-up one second of
joint states is published at once, the fingers opening from 20 to 60 mm, stamped from
t to t + 1 s, and then the reading stamped t + 0.5 s: its frame carries the fingers of
t + 0.5 s (40 mm), not the newest.
Prints "RESULT <json>".
"""
from __future__ import annotations

import json
import sys
import time

from peer_session import PeerSession


SAMPLE_G = 143.2  # what the balance shows with the basic instance's sample on the pan


def main() -> int:
    peer = PeerSession("estimator_probe")
    from geometry_msgs.msg import Pose
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import JointState

    from labference.msg import BalanceReading, GripperCommand, MarkerDetections, WorldState
    from labference.srv import ResetEpisode
    from labference_ros.cell.description import weighing_cell
    from labference_ros.core.measurements import BalanceMeasurement
    from builtin_interfaces.msg import Time

    from labference_ros.msgconv import fill_balance_msg, s_to_stamp, stamp_to_s
    from labference_ros.nodes.matching import measurement_qos
    from labference_ros.tasks import family

    node = peer.node
    weighing = family("feedback_weighing")
    instance = weighing.generate("basic", 1, 3, 3, 3)[0]
    start = weighing.sensor_estimator(instance).initial_positions
    robot = weighing_cell().robot
    pubs = {
        "joints": node.create_publisher(JointState, "/joint_states", QoSProfile(depth=50)),
        "gripper": node.create_publisher(GripperCommand, "/panda_gripper/command", QoSProfile(depth=50)),
        "markers": node.create_publisher(MarkerDetections, "/markers/poses", QoSProfile(depth=50)),
        "reading": node.create_publisher(BalanceReading, "/balance/reading", measurement_qos(200)),
    }
    worlds, checked = [], []
    node.create_subscription(WorldState, "/evaluator/world_state", worlds.append, measurement_qos(200))
    node.create_subscription(BalanceReading, "/evaluator/balance_reading", checked.append, measurement_qos(200))

    def now():
        return node.get_clock().now()

    def marker_frame(positions: dict, stamp) -> MarkerDetections:
        """The tracker's detections of each object at its position, face up."""
        markers = MarkerDetections()
        markers.header.stamp = stamp
        for name, p in sorted(positions.items()):
            pose = Pose()
            pose.position.x, pose.position.y, pose.position.z = p
            pose.orientation.w = 1.0
            markers.names.append(name)
            markers.poses.append(pose)
            markers.reprojection_px.append(0.2)
        return markers

    def publish_frame(positions: dict, grams: float) -> None:
        stamp = now().to_msg()
        joints = JointState(name=[*robot.arm_joints, *robot.finger_joints],
                            position=[*robot.home, 0.04, 0.04])
        joints.header.stamp = stamp
        pubs["joints"].publish(joints)
        pubs["gripper"].publish(GripperCommand(grasp=False, width=0.08, speed=0.1))
        pubs["markers"].publish(marker_frame(positions, stamp))
        time.sleep(0.01)  # the estimator takes the markers before the reading that triggers a frame
        if grams is None:
            return  # a silent balance
        t = stamp.sec + stamp.nanosec * 1e-9
        reading = BalanceMeasurement(raw_g=grams, filtered_g=grams, displayed_g=grams, stable=True)
        pubs["reading"].publish(fill_balance_msg(BalanceReading(), reading, t, "mt_sics:/dev/probe"))

    def frames(positions: dict, grams: float, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            publish_frame(positions, grams)
            time.sleep(0.1)

    def stamp_of(t: float):
        return s_to_stamp(t, Time())

    def stamp_s(msg) -> float:
        return stamp_to_s(msg.header.stamp)

    def reset():
        answer = peer.call(ResetEpisode, "/world_estimator/reset",
                           ResetEpisode.Request(episode_id="ep0", instance_json=instance.to_json()))
        return {"success": bool(answer.success), "message": answer.message}

    if sys.argv[1:] == ["balance"]:
        bx, by = instance.layout["balance"]
        pan_z = weighing_cell().balance.pan_top_z
        result = {}
        for step, place in (("unmarked", None), ("off", (bx + 0.03, by, pan_z)), ("near", (bx, by + 0.004, pan_z))):
            frames(start if place is None else {**start, "balance": place}, SAMPLE_G, 2.0)
            result[step] = reset()
        print("RESULT " + json.dumps(result), flush=True)
        peer.close()
        return 0

    if sys.argv[1:] == ["lag"]:
        frames(start, SAMPLE_G, 4.0)  # the first frames may come before the estimator matched
        result = {"set_up": reset()}
        worlds.clear()
        t0 = now().nanoseconds * 1e-9 + 0.5
        for k in range(51):
            joints = JointState(name=[*robot.arm_joints, *robot.finger_joints],
                                position=[*robot.home, 0.01 + 0.0004 * k, 0.01 + 0.0004 * k])
            joints.header.stamp = stamp_of(t0 + 0.02 * k)
            pubs["joints"].publish(joints)
        pubs["markers"].publish(marker_frame(start, stamp_of(t0 + 0.5)))
        time.sleep(0.5)  # every joint state has arrived before the reading
        reading = BalanceMeasurement(raw_g=SAMPLE_G, filtered_g=SAMPLE_G, displayed_g=SAMPLE_G, stable=True)
        pubs["reading"].publish(fill_balance_msg(BalanceReading(), reading, t0 + 0.5, "mt_sics:/dev/probe"))
        end = time.monotonic() + 5.0
        while time.monotonic() < end and not any(abs(stamp_s(w) - (t0 + 0.5)) < 1e-6 for w in worlds):
            time.sleep(0.05)
        result["widths"] = [w.gripper_width for w in worlds if abs(stamp_s(w) - (t0 + 0.5)) < 1e-6]
        print("RESULT " + json.dumps(result), flush=True)
        peer.close()
        return 0

    result = {"objects": sorted(start)}
    # 1. readings and joints, but no marker yet
    end = time.monotonic() + 3.0
    while time.monotonic() < end:
        publish_frame({}, SAMPLE_G)
        time.sleep(0.1)
    result["before_markers"] = reset()
    # 2. every marker where the instance puts it
    frames(start, SAMPLE_G, 2.0)
    result["set_up"] = reset()
    # 3. frames the markers explain
    worlds.clear()
    checked.clear()
    frames(start, SAMPLE_G, 2.0)
    result["worlds"] = [{o.name: list(o.contacts) for o in w.objects} for w in worlds]
    result["checked"] = [[r.valid, r.invalid_reason] for r in checked]
    # The referee's input merger pairs a world state with the reading of the same stamp.
    result["stamps"] = [sorted((m.header.stamp.sec, m.header.stamp.nanosec) for m in worlds),
                        sorted((m.header.stamp.sec, m.header.stamp.nanosec) for m in checked)]
    # 4. 17 g more with nothing moved
    checked.clear()
    frames(start, SAMPLE_G + 17.0, 1.0)
    result["unexplained"] = [[r.valid, r.invalid_reason] for r in checked]
    # 5. a standard off its start
    moved = dict(start)
    x, y, z = moved["std_10"]
    moved["std_10"] = (x + 0.05, y, z)
    frames(moved, SAMPLE_G, 1.0)
    result["moved"] = reset()
    # 6. the balance falls silent (markers and joints go on)
    checked.clear()
    end = time.monotonic() + 1.6
    while time.monotonic() < end:
        publish_frame(start, None)
        time.sleep(0.1)
    result["silent"] = [[r.valid, r.invalid_reason] for r in checked]
    print("RESULT " + json.dumps(result), flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
