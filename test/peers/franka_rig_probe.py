"""Plays the policy bridge between franka_arm_bridge and franka_standin (franka_ros2's
robot PC) and checks what the arm does:
  1. /arm/joint_states carries the arm's state under the graph's joint names;
  2. episode e1: 1.5 s of smooth rows at 50 Hz on the graph's topic: the arm follows
     them to the target, no reflex, no hardware fault;
  3. an injected reflex (a collision) during e1: /hardware/fault names the robot error
     and the bridge's pause is asked with reason hardware_fault;
  4. after recovery, episode e2: rows go out again; then the joint states stall: a
     hardware fault for e2 names the stale joint states;
  5. the hand (through franka_gripper_bridge and /fr3_gripper's actions): homed at the
     start, a grasp command closes the fingers to its width, a move opens them, and
     the end of e2 opens them again;
  6. episode e3, the old command style straight to franka_ros2's controller (single
     position-only points each interval): the stand-in raises the velocity
     discontinuity reflex, and the fault for e3 names it;
  7. after recovery, episode e4: the trajectory controller deactivated (as
     controller_manager lists it): the fault for e4 names the controller.
Prints "RESULT <json>".

With the argument `late`, instead: episode e1, rows to full speed, then the probe falls
0.6 s behind (past what the bridge's latency absorbs) and sends the rest on its old schedule: the
arm must stop and hold with no reflex and no hardware fault, /arm/late_rows names the
tested system's lateness; rows on time from where the arm stands move it again; an
injected reflex is still a hardware fault."""
from __future__ import annotations

import json
import sys
import time

import numpy as np

from peer_session import PeerSession

from labference_ros.devices.franka_arm import ROBOT_MODE_MOVE

T = 0.02
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
GRAPH_ARM = [f"panda_joint{i}" for i in range(1, 8)]
FR3_ARM = [f"fr3_joint{i}" for i in range(1, 8)]


def smooth(start, distance, seconds):
    t = np.arange(1, int(round(seconds / T)) + 1) * T / seconds
    return start + np.outer(10 * t ** 3 - 15 * t ** 4 + 6 * t ** 5, distance)


def main() -> int:
    peer = PeerSession("franka_rig_probe")
    from builtin_interfaces.msg import Duration
    from franka_msgs.msg import FrankaRobotState
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from labference.msg import GripperCommand
    from labference.srv import SetPause

    node = peer.node
    qos = QoSProfile(depth=10)
    joints: list[JointState] = []
    faults: list[dict] = []
    pauses: list[dict] = []
    modes: list[int] = []
    node.create_subscription(JointState, "/arm/joint_states", joints.append, qos)
    node.create_subscription(String, "/hardware/fault", lambda m: faults.append(json.loads(m.data)), qos)
    node.create_subscription(FrankaRobotState, "/franka_robot_state_broadcaster/robot_state",
                             lambda m: modes.append(int(m.robot_mode)), qos)

    def on_pause(request, response):
        pauses.append({"episode_id": request.episode_id, "pause": request.pause, "reason": request.reason})
        response.success = True
        return response

    node.create_service(SetPause, "/policy_bridge/pause", on_pause)
    status = node.create_publisher(String, "/policy_bridge/status", qos)
    rows_out = node.create_publisher(JointTrajectory, "/panda_arm_controller/joint_trajectory", qos)
    direct = node.create_publisher(JointTrajectory, "/joint_trajectory_controller/joint_trajectory", qos)
    inject = node.create_publisher(String, "/franka_standin/inject", qos)
    gripper = node.create_publisher(GripperCommand, "/panda_gripper/command", qos)

    def finger_width():
        return float(sum(joints[-1].position[7:9]))

    def wait_until(condition, timeout):
        deadline = time.monotonic() + timeout
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.02)
        return condition()

    def say(episode, state):
        status.publish(String(data=json.dumps({"episode_id": episode, "state": state, "reason": ""})))

    def recover_then_run(ended: str, episode: str) -> None:
        """The arm recovered after `ended`'s fault; `episode` starts once the robot reports MOVE
        again, seen in several states (the bridge reads the same stream): a fault still standing
        when it starts would be its fault, as on a real rig."""
        inject.publish(String(data="recover"))
        say(ended, "error")
        recovered_from = len(modes)
        wait_until(lambda: modes[recovered_from:].count(ROBOT_MODE_MOVE) >= 10, 30)
        say(episode, "running")
        time.sleep(0.3)

    def arm_now():
        return np.array(joints[-1].position[:7])

    def send(rows, publisher, names, start=None):
        # As the policy bridge does: one row per interval, stamped with its interval's start
        # (this computer's clock, from `start` in ns), one position-only point reached an interval later.
        start = node.get_clock().now().nanoseconds if start is None else start
        next_at = time.monotonic()
        for k, row in enumerate(rows):
            point = JointTrajectoryPoint(positions=[float(x) for x in row],
                                         time_from_start=Duration(sec=0, nanosec=int(T * 1e9)))
            msg = JointTrajectory(joint_names=names, points=[point])
            if publisher is rows_out:
                ns = start + int(round(k * T * 1e9))
                msg.header.stamp.sec, msg.header.stamp.nanosec = ns // 10**9, ns % 10**9
            publisher.publish(msg)
            next_at += T
            time.sleep(max(0.0, next_at - time.monotonic()))
        return start * 1e-9

    result = {}
    assert wait_until(lambda: joints and rows_out.get_subscription_count() and direct.get_subscription_count()
                      and inject.get_subscription_count() and status.get_subscription_count(), 60), "no graph"
    result["names"] = list(joints[-1].name)
    late_rows: list[dict] = []
    node.create_subscription(String, "/arm/late_rows", lambda m: late_rows.append(json.loads(m.data)), qos)
    if sys.argv[1:] == ["late"]:
        say("e1", "running")
        time.sleep(0.3)
        start, begun = arm_now(), node.get_clock().now().nanoseconds
        rows = smooth(start, np.array([0.5, 0, 0, 0, 0, 0, 0]), 1.0)
        send(rows[:25], rows_out, GRAPH_ARM, start=begun)  # to full speed
        time.sleep(0.6)  # the tested system falls behind, then goes on with its old rows
        late_from = send(rows[25:], rows_out, GRAPH_ARM, start=begun + int(round(25 * T * 1e9)))
        time.sleep(0.8)
        held = arm_now()
        speeds = [float(np.abs(js.velocity[:7]).max()) for js in joints[-10:]]
        time.sleep(0.3)
        result["late"] = {"late_rows": list(late_rows), "late_from": late_from, "faults": list(faults),
                          "reflex": 4 in modes,
                          "speed": max(speeds), "held": float(np.abs(arm_now() - held).max()),
                          "short_of": float(rows[-1][0] - held[0])}
        # Rows on time again from where the arm stands: it follows them.
        here = arm_now()
        resumed_from = send(smooth(here, np.array([-0.2, 0, 0, 0, 0, 0, 0]), 0.8), rows_out, GRAPH_ARM)
        wait_until(lambda: abs(arm_now() - here)[0] > 0.15, 10)
        result["resumed"] = {"moved": float(np.abs(arm_now() - here)[0]), "faults": list(faults),
                             "late_rows": list(late_rows), "resumed_from": resumed_from, "reflex": 4 in modes}
        inject.publish(String(data="reflex"))  # a genuine fault is still the hardware's
        wait_until(lambda: faults and pauses, 10)
        result["reflex"] = {"faults": list(faults), "pauses": list(pauses)}
        print("RESULT " + json.dumps(result), flush=True)
        peer.close()
        return 0
    start = arm_now()
    # 2. a smooth move in e1
    say("e1", "running")
    time.sleep(0.3)
    target = start + np.array([0.4, 0.3, 0.0, -0.2, 0.0, 0.0, 0.3])
    send(smooth(start, target - start, 1.5), rows_out, GRAPH_ARM)
    wait_until(lambda: np.abs(arm_now() - target).max() < 1e-4, 10)  # reached a latency after the rows
    time.sleep(0.3)
    result["moved"] = {"error": float(np.abs(arm_now() - target).max()), "faults": list(faults),
                       "reflex": 4 in modes, "modes": sorted(set(modes))}
    # 3. an injected reflex
    inject.publish(String(data="reflex"))
    wait_until(lambda: faults and pauses, 10)
    result["reflex"] = {"faults": list(faults), "pauses": list(pauses)}
    # 4. recovery, e2, then stalled joint states
    recover_then_run("e1", "e2")
    here = arm_now()
    attempts = 0
    while attempts < 3:  # this probe, starved of CPU, may send rows late: the bridge stops the arm
        attempts += 1
        late_before = len(late_rows)
        now = arm_now()
        send(smooth(now, here + np.array([-0.2, 0, 0, 0, 0, 0, 0]) - now, 0.8), rows_out, GRAPH_ARM)
        moved = wait_until(lambda: abs(arm_now() - here)[0] > 0.15, 10)  # the stand-in follows at its own pace
        if moved or len(late_rows) == late_before:
            break
    result["after_recovery"] = {"moved": float(np.abs(arm_now() - here)[0]), "faults": len(faults),
                                "attempts": attempts, "late_rows": list(late_rows)}
    inject.publish(String(data="stall"))
    wait_until(lambda: len(faults) >= 2, 10)
    result["stall"] = {"faults": list(faults[1:])}
    # 5. the hand
    inject.publish(String(data="resume"))
    assert wait_until(lambda: gripper.get_subscription_count(), 30), "no gripper bridge"
    wait_until(lambda: abs(finger_width() - 0.08) < 1e-6, 10)  # homed
    widths = {"open": finger_width()}
    gripper.publish(GripperCommand(grasp=True, width=0.03, speed=0.1, force=20.0, epsilon_inner=0.005,
                                   epsilon_outer=0.005))
    wait_until(lambda: abs(finger_width() - 0.03) < 1e-6, 10)
    widths["grasped"] = finger_width()
    gripper.publish(GripperCommand(grasp=False, width=0.07, speed=0.1, force=0.0, epsilon_inner=0.005,
                                   epsilon_outer=0.005))
    wait_until(lambda: abs(finger_width() - 0.07) < 1e-6, 10)
    widths["moved"] = finger_width()
    gripper.publish(GripperCommand(grasp=True, width=0.03, speed=0.1, force=20.0, epsilon_inner=0.005,
                                   epsilon_outer=0.005))
    wait_until(lambda: abs(finger_width() - 0.03) < 1e-6, 10)
    widths["holding"] = finger_width()
    # 6. position-only single points straight to the controller, in e3 (e2's end opens the hand)
    say("e2", "error")
    wait_until(lambda: abs(finger_width() - 0.08) < 1e-6, 10)
    widths["released"] = finger_width()
    result["hand"] = widths
    time.sleep(0.5)
    say("e3", "running")
    time.sleep(0.3)
    here = arm_now()
    send(smooth(here, np.array([0.3, 0, 0, 0, 0, 0, 0]), 1.0), direct, FR3_ARM)
    wait_until(lambda: len(faults) >= 3, 5)
    result["direct"] = {"faults": list(faults[2:])}
    # 7. recovered, e4, then the trajectory controller deactivated
    recover_then_run("e3", "e4")
    inject.publish(String(data="deactivate"))
    wait_until(lambda: len(faults) >= 4, 10)
    result["controller"] = {"faults": list(faults[3:])}
    print("RESULT " + json.dumps(result), flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
