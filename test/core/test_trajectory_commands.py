"""The trajectory messages built from rows for franka_ros2's trajectory controller."""
from __future__ import annotations

import numpy as np

from labference_ros.core.robots import FR3
from labference_ros.core.trajectory_commands import (StreamState, executed_motion, message_motion, next_state,
                                                     quintic, row_command)

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
