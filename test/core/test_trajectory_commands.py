"""The trajectory messages built from rows for franka_ros2's trajectory controller."""
from __future__ import annotations

import numpy as np

from labference_ros.core.robots import FR3
from labference_ros.core.safety import motion_problems
from labference_ros.core.trajectory_commands import (StreamState, executed_motion, message_motion, next_state,
                                                     quintic, row_command, state_during, RowStream)

T = 0.02
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


def minimum_jerk_rows(distance, seconds):
    t = np.arange(1, int(round(seconds / T)) + 1) * T / seconds
    s = 10 * t ** 3 - 15 * t ** 4 + 6 * t ** 5
    return HOME + np.outer(s, distance)


def test_the_quintic_meets_both_points():
    p0, v0, a0 = np.zeros(7), np.ones(7), np.zeros(7)
    p1, v1, a1 = np.full(7, 0.03), np.full(7, 2.0), np.full(7, 5.0)
    q, qd, qdd, _ = quintic(p0, v0, a0, p1, v1, a1, T, np.array([0.0, T]))
    assert np.allclose(q, [p0, p1]) and np.allclose(qd, [v0, v1]) and np.allclose(qdd, [a0, a1])


def test_rows_on_a_quadratic_path_are_sent_with_its_velocity_and_acceleration():
    acceleration = np.array([4.0, -2.0, 0, 0, 0, 0, 0])
    rows = HOME + 0.5 * acceleration * (np.arange(1, 11)[:, None] * T) ** 2
    state = StreamState.at_rest(HOME)
    for k, row in enumerate(rows, start=1):
        state = next_state(state, row, T)
        assert np.allclose(state.velocity, acceleration * k * T)
        assert np.allclose(state.acceleration, acceleration)
    motion = executed_motion(StreamState.at_rest(HOME), rows, T)
    # Constant acceleration: no jerk between rows once the first interval has built it up from rest.
    assert np.abs(motion.jerks[:20]).max() > 0.0
    assert np.allclose(motion.jerks[20:], 0.0, atol=1e-6)


def test_a_smooth_move_keeps_the_fr3s_limits_at_the_controllers_rate():
    motion = executed_motion(StreamState.at_rest(HOME), minimum_jerk_rows([0.8, 0.5, 0, 0, 0, 0, -0.6], 1.5), T)
    assert len(motion.times) == 75 * 20  # 1 kHz over 75 rows
    assert np.abs(motion.accelerations).max() < 10.0
    assert np.abs(motion.jerks).max() < 5000.0


def test_a_position_step_is_a_jerk_far_beyond_the_limit():
    rows = np.repeat(HOME[None], 10, axis=0)
    rows[5:, 0] += 0.01
    motion = executed_motion(StreamState.at_rest(HOME), rows, T)
    assert np.abs(motion.jerks[:, 0]).max() > 5000.0


def test_every_message_ends_at_rest_within_the_limits():
    rows = minimum_jerk_rows([0.8, 0, 0, 0, 0, 0, 0], 1.0)
    state = StreamState.at_rest(HOME)
    for row in rows[:25]:  # mid-move, at about full speed
        command, after = row_command(state, row, T, FR3.arm_joints, FR3.max_acceleration)
        assert command.joint_names == FR3.arm_joints
        assert np.allclose(command.times, T * np.arange(1, len(command.times) + 1))
        assert np.allclose(command.positions[0], row)
        assert np.allclose(command.velocities[-1], 0.0) and np.allclose(command.accelerations[-1], 0.0)
        motion = message_motion(state, command)
        assert np.abs(motion.accelerations).max() < 10.0 and np.abs(motion.jerks).max() < 5000.0
        state = after
    assert len(command.times) > 5  # moving fast: the tail takes several intervals


def test_several_rows_in_one_message_are_sent_in_order_then_brought_to_rest():
    rows = minimum_jerk_rows([0.5, 0, 0, 0, 0, 0, 0], 1.0)[:10]
    command, after = row_command(StreamState.at_rest(HOME), rows, T, FR3.arm_joints, FR3.max_acceleration)
    assert np.allclose(command.positions[:10], rows) and np.allclose(after.last, rows[-1])
    assert len(command.times) > 10 and np.allclose(command.velocities[-1], 0.0)


def test_the_state_during_a_message_follows_its_motion_and_rests_at_its_end():
    start = StreamState.at_rest(HOME)
    rows = minimum_jerk_rows([0.5, 0, 0, 0, 0, 0, 0], 1.0)[:25]
    state = start
    for row in rows[:-1]:
        _, state = row_command(state, row, T, FR3.arm_joints, FR3.max_acceleration)
    command, after = row_command(state, rows[-1], T, FR3.arm_joints, FR3.max_acceleration)
    at_row = state_during(state, command, T)
    assert np.allclose(at_row.last, after.last, atol=1e-9) and np.allclose(at_row.velocity, after.velocity)
    later = state_during(state, command, 3 * T)
    assert later.last[0] > after.last[0] and 0 < later.velocity[0] < after.velocity[0]
    assert np.allclose(state_during(state, command, 10.0).last, command.positions[-1])


def test_a_row_stream_delivered_with_jitter_moves_the_stand_in_arm_without_a_reflex():
    # Rows received up to 35 ms late (the latency is 60 ms); each message stamped with its
    # send time in the robot's clock, delivered within a millisecond.
    from labference_ros.devices.franka_arm import ArmStandIn

    rng = np.random.default_rng(3)
    rows = minimum_jerk_rows([0.6, 0.4, 0, -0.3, 0, 0, 0.5], 1.2)
    arm = ArmStandIn(FR3, HOME)
    stream = RowStream(FR3.arm_joints, T, FR3.max_acceleration, latency_s=0.06)
    last = -1.0
    for k, row in enumerate(rows):
        received = max(k * T + rng.uniform(0.0, 0.035), last + 1e-3)
        last = received
        arm.advance(received + rng.uniform(0.0, 0.001))
        command = stream.send(received, k * T, row, HOME)
        # What the arm bridge checks before it sends a message: nothing here.
        assert motion_problems(FR3, message_motion(stream.sent_from, command)) == []
        arm.command(command.times, command.positions, command.velocities, command.accelerations, start=received)
    arm.advance(len(rows) * T + 1.0)
    assert arm.error == "", arm.error_detail
    assert stream.starts == 1  # one path: no row was too late
    assert np.abs(arm.q - rows[-1]).max() < 1e-3


def test_a_row_stream_that_stops_brings_the_arm_to_rest_and_starts_again_from_there():
    from labference_ros.devices.franka_arm import ArmStandIn

    arm = ArmStandIn(FR3, HOME)
    stream = RowStream(FR3.arm_joints, T, FR3.max_acceleration, latency_s=0.06)
    first = minimum_jerk_rows([0.4, 0, 0, 0, 0, 0, 0], 1.0)[:25]  # cut off at full speed
    for k, row in enumerate(first):
        arm.advance(k * T)
        command = stream.send(k * T, k * T, row, HOME)
        arm.command(command.times, command.positions, command.velocities, command.accelerations, start=k * T)
    arm.advance(1.5)  # no rows for a while: the tail stops the arm, no reflex
    assert arm.error == "" and np.allclose(arm.dq, 0.0)
    rest = arm.q.copy()
    assert rest[0] > first[-1][0]  # it ran on past the last row while braking
    assert np.allclose(rest, stream.commanded(1.5).last)
    # The system goes on from where the arm stands (as after a pause): a new path.
    t0 = 2.0
    second = rest + (minimum_jerk_rows([-0.3, 0, 0, 0, 0, 0, 0], 1.0) - HOME)
    for k, row in enumerate(second):
        now = t0 + k * T
        arm.advance(now)
        command = stream.send(now, now, row, HOME)
        arm.command(command.times, command.positions, command.velocities, command.accelerations, start=now)
    arm.advance(t0 + 2.0)
    assert stream.starts == 2
    assert arm.error == "", arm.error_detail
    assert np.abs(arm.q - second[-1]).max() < 1e-3


def test_a_row_later_than_the_latency_mid_motion_asks_what_the_arm_would_refuse():
    # What the arm bridge then refuses to send (devices/franka_arm.CommandGate: the tested
    # system's lateness, the arm stops): the path restarts from the braking tail while the
    # rows have gone on.
    rows = minimum_jerk_rows([0.6, 0, 0, 0, 0, 0, 0], 1.0)
    stream = RowStream(FR3.arm_joints, T, FR3.max_acceleration, latency_s=0.06)
    for k, row in enumerate(rows[:25]):
        stream.send(k * T, k * T, row, HOME)
    late = 25 * T + 0.15
    command = stream.send(late, 25 * T, rows[25], HOME)
    assert stream.starts == 2
    assert motion_problems(FR3, message_motion(stream.sent_from, command)) != []
