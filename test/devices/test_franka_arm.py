"""The franka_ros2 stand-in's arm and the fault watch (pure)."""
from __future__ import annotations

import numpy as np

from labference_ros.core.robots import FR3
from labference_ros.core.trajectory_commands import StreamState, row_command
from labference_ros.devices.franka_arm import (ACCELERATION_DISCONTINUITY, POSITION_LIMITS, ROBOT_MODE_IDLE,
                                               ROBOT_MODE_MOVE, ROBOT_MODE_REFLEX, VELOCITY_DISCONTINUITY, VELOCITY_LIMITS,
                                               ArmStandIn, FaultWatch)

T = 0.02
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


def smooth_rows(distance, seconds):
    t = np.arange(1, int(round(seconds / T)) + 1) * T / seconds
    return HOME + np.outer(10 * t ** 3 - 15 * t ** 4 + 6 * t ** 5, distance)


def test_rows_sent_as_franka_commands_move_the_arm_without_a_reflex():
    arm = ArmStandIn(FR3, HOME)
    state = StreamState.at_rest(HOME)
    rows = smooth_rows([0.6, 0.4, 0, -0.3, 0, 0, 0.5], 1.2)
    for k, row in enumerate(rows):
        command, state = row_command(state, row, T, FR3.arm_joints, FR3.max_acceleration)
        arm.command(command.times, command.positions, command.velocities, command.accelerations)
        arm.advance((k + 1) * T)
    arm.advance(len(rows) * T + 0.5)
    assert arm.error == "" and arm.robot_mode == ROBOT_MODE_MOVE
    assert np.allclose(arm.q, rows[-1], atol=1e-3) and np.allclose(arm.dq, 0.0)


def test_single_position_only_points_each_interval_trip_the_velocity_discontinuity_reflex():
    # The policy bridge's own rows sent unchanged: linear between points, a velocity step each row.
    arm = ArmStandIn(FR3, HOME)
    for k, row in enumerate(smooth_rows([0.6, 0, 0, 0, 0, 0, 0], 1.2)):
        arm.command([T], row[None, :])
        arm.advance((k + 1) * T)
        if arm.error:
            break
    assert arm.error == VELOCITY_DISCONTINUITY and arm.robot_mode == ROBOT_MODE_REFLEX
    assert "joint 1 velocity jumped" in arm.error_detail


def test_a_reflex_stops_the_arm_until_recovered():
    arm = ArmStandIn(FR3, HOME)
    arm.command([0.02], (HOME + [0.01, 0, 0, 0, 0, 0, 0])[None, :], np.zeros((1, 7)), np.zeros((1, 7)))
    arm.advance(0.02)
    # 0.01 rad in 20 ms from rest: the velocity leaves zero at 45 rad/s^2 in the first cycle
    assert arm.error in (VELOCITY_DISCONTINUITY, ACCELERATION_DISCONTINUITY)
    stopped = arm.q.copy()
    arm.command([0.5], HOME[None, :], np.zeros((1, 7)), np.zeros((1, 7)))
    arm.advance(1.0)
    assert np.array_equal(arm.q, stopped)  # commands are ignored in reflex
    arm.recover()
    assert arm.robot_mode == ROBOT_MODE_MOVE
    arm.command([2.0], HOME[None, :], np.zeros((1, 7)), np.zeros((1, 7)))
    arm.advance(3.5)
    assert arm.error == "" and np.allclose(arm.q, HOME)


def test_a_target_beyond_the_fr3_range_trips_a_limit_before_the_arm_gets_there():
    arm = ArmStandIn(FR3, np.array([0, 0, 0, -1.5, 0, 0.6, 0]))
    target = np.array([0, 0, 0, -1.5, 0, 0.5, 0])  # joint 6 below 0.5445
    arm.command([2.0], target[None, :], np.zeros((1, 7)), np.zeros((1, 7)))
    arm.advance(2.0)
    # The FR3's velocity bound falls to zero at the end of the range: it trips first.
    assert arm.error in (POSITION_LIMITS, VELOCITY_LIMITS) and "joint 6" in arm.error_detail
    assert arm.q[5] >= FR3.lower[5]


def test_the_fault_watch_names_each_cause():
    watch = FaultWatch(joint_state_timeout_s=0.25)
    assert watch.fault(10.0) == ""  # nothing judged before the arm is up
    watch.joint_state(10.0)
    watch.robot_state(ROBOT_MODE_MOVE, ())
    assert watch.fault(10.2) == ""
    assert watch.fault(10.3).startswith("joint states stale: none for 0.30 s")
    watch.joint_state(10.3)
    watch.robot_state(ROBOT_MODE_REFLEX, ("joint_motion_generator_velocity_discontinuity",))
    assert watch.fault(10.31) == ("robot error: joint_motion_generator_velocity_discontinuity (robot mode reflex)")
    watch.robot_state(ROBOT_MODE_IDLE, ())
    assert watch.fault(10.31).startswith("robot mode idle")
    assert watch.fault(10.31, watch_robot_state=False) == ""
