"""The safety envelope (core.safety) and its place in the episode loop: a chunk
that would exceed a joint limit rate or leave the workspace never reaches the arm."""
from __future__ import annotations

import numpy as np
import pytest

from labference_ros.core.robots import FR3
from labference_ros.core.safety import PANDA_MAX_ACCELERATION, PANDA_MAX_VELOCITY, SafetyEnvelope
from test_episode_loop import HOME, make_loop, observe, rows

INTERVAL = 0.02
BOX = SafetyEnvelope(workspace_min=(-1.0, -1.0, 0.0), workspace_max=(1.0, 1.0, 1.0))


def tips_at(z: float):
    """A stand-in for forward kinematics: every row's fingertips at height z."""
    return lambda arm: np.tile([0.4, 0.0, z], (len(arm), 1))


def ramp(step: np.ndarray, n: int = 5) -> np.ndarray:
    return np.array([HOME + step * (k + 1) for k in range(n)])


def test_a_chunk_continuing_at_nine_tenths_of_the_speed_limits_passes():
    step = np.array(PANDA_MAX_VELOCITY) * INTERVAL * 0.9
    assert BOX.violations(ramp(step), HOME, step / INTERVAL, INTERVAL, tips_at(0.3)) == []


def test_a_velocity_over_the_limit_names_joint_row_and_limit():
    step = np.zeros(7)
    step[4] = PANDA_MAX_VELOCITY[4] * INTERVAL * 1.1
    reasons = BOX.violations(ramp(step), HOME, step / INTERVAL, INTERVAL, tips_at(0.3))
    (reason,) = reasons
    assert reason.startswith("joint 5 velocity +2.871 rad/s at row 0") and "2.61" in reason


def test_a_jump_from_the_measured_state_is_a_velocity_violation():
    target = HOME.copy()
    target[0] += 0.3  # one interval: 15 rad/s
    reasons = BOX.violations(target[None], HOME, None, INTERVAL, tips_at(0.3))
    assert "joint 1 velocity" in reasons[0] and "row 0" in reasons[0]


def test_an_abrupt_start_is_an_acceleration_violation():
    q = [HOME]
    velocity = np.zeros(7)
    velocity[1] = PANDA_MAX_VELOCITY[1] * 0.2
    for k in range(4):  # slow, then a jump in speed below the velocity limit
        q.append(q[-1] + (velocity if k < 2 else velocity * 4.5) * INTERVAL)
    reasons = BOX.violations(np.array(q[1:]), HOME, velocity, INTERVAL, tips_at(0.3))
    assert len(reasons) == 1 and reasons[0].startswith("joint 2 acceleration") and "row 2" in reasons[0]
    assert str(PANDA_MAX_ACCELERATION[1]) in reasons[0]


@pytest.mark.parametrize("z", [-0.01, 1.2])
def test_fingertips_outside_the_box_are_refused(z):
    (reason,) = BOX.violations(rows(3)[:, :7], HOME, None, INTERVAL, tips_at(z))
    assert "outside the workspace box" in reason and f"{z:.3f}" in reason


def test_the_loop_rejects_a_chunk_outside_the_envelope_and_holds():
    envelope = lambda arm, start, v, interval: BOX.violations(arm, start, v, interval, tips_at(-0.05))
    loop, records = make_loop(envelope=envelope)
    observe(loop, 0.0)
    verdict = loop.take_chunk(rows(4), 0.0)
    assert verdict.status == "rejected" and verdict.applied is None
    chunk = [r for r in records if r["record"] == "chunk"][-1]
    assert chunk["status"] == "rejected" and chunk["reasons"][0].startswith("safety envelope: fingertips")
    command = loop.next_command(0.02)
    assert command.row is None  # the arm holds one interval
    assert loop.next_command(0.04) is None


def test_without_an_envelope_the_same_chunk_is_queued():
    loop, _ = make_loop()
    observe(loop, 0.0)
    assert loop.take_chunk(rows(4), 0.0).status == "accepted"
    assert loop.next_command(0.02).row is not None


def test_an_abrupt_start_from_rest_is_an_acceleration_violation():
    step = np.zeros(7)
    step[0] = PANDA_MAX_VELOCITY[0] * INTERVAL * 0.9  # under the velocity limit, from rest in one interval
    reasons = BOX.violations(ramp(step), HOME, None, INTERVAL, tips_at(0.3))
    assert len(reasons) == 1 and reasons[0].startswith("joint 1 acceleration") and "row 0" in reasons[0]


def test_the_loop_continues_a_moving_setpoint_not_the_lagging_measurement():
    """Mid-motion the measured position lags the commanded one; the next chunk is
    checked against the last command and its velocity."""
    seen = []

    def envelope(arm, start, velocity, interval):
        seen.append((np.array(start), None if velocity is None else np.array(velocity)))
        return BOX.violations(arm, start, velocity, interval, tips_at(0.3))

    loop, _ = make_loop(envelope=envelope)
    step = np.zeros(8)
    step[0] = 0.02  # 1 rad/s
    moving = np.array([np.concatenate([HOME, [0.08]]) + step * (k + 1) for k in range(30)])
    observe(loop, 0.0)
    slow_start = np.array([np.concatenate([HOME, [0.08]]) + step * (k + 1) ** 2 / 60 for k in range(30)])
    assert loop.take_chunk(slow_start, 0.0).status == "accepted"
    for k in range(30):
        loop.next_command(0.02 * (k + 1))
    lagging = HOME.copy()
    lagging[0] = slow_start[-1, 0] - 0.05  # the arm is behind its setpoint
    observe(loop, 0.6, q=lagging)
    continuing = slow_start[-1] + moving - moving[0] + step
    assert loop.take_chunk(continuing, 0.6).status == "accepted", loop.history
    assert np.allclose(seen[-1][0], slow_start[-1, :7])
    assert seen[-1][1][0] == pytest.approx((slow_start[-1, 0] - slow_start[-2, 0]) / 0.02)


def test_a_pause_drops_the_queued_rows_and_the_setpoint_rests():
    loop, records = make_loop()
    observe(loop, 0.0)
    step = np.zeros(8)
    step[0] = 0.01
    loop.take_chunk(np.array([np.concatenate([HOME, [0.08]]) + step * (k + 1) for k in range(10)]), 0.0)
    loop.next_command(0.02)
    loop.next_command(0.04)
    moving_at = loop.setpoint.copy()
    stop = loop.pause(0.04, "operator")
    # The setpoint (0.5 rad/s on joint 1) decelerates to rest, within the limits, without a jolt.
    assert len(stop) > 1 and stop[-1][0] > moving_at[0] and np.allclose(stop[-1], loop.setpoint)
    assert BOX.violations(stop, moving_at, step[:7] / INTERVAL, INTERVAL, tips_at(0.3)) == []
    assert np.abs(stop[-1] - stop[-2]).max() < 0.01 * 0.5  # nearly at rest at the end
    assert loop.next_command(0.06) is None and loop.setpoint_velocity is None
    loop.resume(0.5, "operator")
    assert [r["record"] for r in records[-2:]] == ["paused", "resumed"]
    assert records[-2]["rows_dropped"] == 8 and records[-2]["reason"] == "operator"


def _paused_near_a_fixture(margin: float | None, robot_limits: bool = True, speed: float = 0.5):
    """A loop whose setpoint moves joint 1 at `speed` rad/s, paused; its envelope is the FR3's own
    check (robot_limits; else the Panda-like BOX) and a stand-in fixture `margin` rad ahead on
    joint 1 (None: none). Returns (stop, paused record, where the setpoint was, what the
    envelope was shown)."""
    from labference_ros.skills.safety_modes import safety_check

    shown = []
    limits = safety_check("fr3") if robot_limits else (
        lambda r, start, v, i: BOX.violations(r, start, v, i, tips_at(0.3)))

    def envelope(rows_, start, velocity, interval):
        shown.append(np.array(rows_))
        reasons = limits(rows_, start, velocity, interval)
        if fixture is not None and np.max(np.asarray(rows_)[:, 0]) > fixture:
            reasons.append("hand touches the balance")
        return reasons

    envelope.stop_acceleration = getattr(limits, "stop_acceleration", None)
    fixture = None
    loop, records = make_loop(envelope=envelope)
    observe(loop, 0.0, width=0.05)
    start = np.concatenate([HOME, [0.05]])
    # To `speed` on joint 1 along a smoothstep in 0.4 s, then on at that speed.
    t = np.arange(1, 31) * INTERVAL
    ramp = speed * np.where(t < 0.4, 0.4 * ((t / 0.4) ** 3 - (t / 0.4) ** 4 / 2), 0.4 / 2 + (t - 0.4))
    chunk = np.tile(start, (30, 1))
    chunk[:, 0] += ramp
    assert loop.take_chunk(chunk, 0.0).status == "accepted", loop.history
    for k in range(28):
        loop.next_command(INTERVAL * (k + 1))
    moving_at = loop.setpoint.copy()
    fixture = None if margin is None else moving_at[0] + margin
    stop = loop.pause(0.6, "operator")
    return stop, records[-1], moving_at, shown


def test_a_pause_stops_smoothly_within_the_fr3s_own_limits():
    from labference_ros.skills.safety_modes import safety_check

    stop, paused, moving_at, shown = _paused_near_a_fixture(None)
    # The gentle stop (constant deceleration) overshoots the FR3's interpolated acceleration limit
    # between its first rows; the smooth stop at half the FR3's limits passes.
    assert paused["stop"] == "smooth at 0.5 of the limits" and "stop_outside" not in paused, paused
    assert safety_check("fr3")(stop, moving_at, np.eye(7)[0] * 0.5, INTERVAL) == []
    assert stop[-1][0] == pytest.approx(moving_at[0] + 0.5 * 0.16 / 2)  # 8 rows of 0.02 s, half the speed
    assert shown[-1].shape[1] == 8 and np.all(shown[-1][:, 7] == 0.05)  # checked with the hand's width
    # With the Panda-like box alone the gentle stop passes, and the record says nothing more.
    stop, paused, moving_at, _ = _paused_near_a_fixture(None, robot_limits=False)
    assert "stop" not in paused and "stop_outside" not in paused
    assert len(stop) == 4 and stop[-1][0] == pytest.approx(moving_at[0] + 0.02)


def test_a_pause_whose_stop_would_touch_a_fixture_stops_harder_within_the_limits():
    from labference_ros.skills.safety_modes import safety_check

    # At 1 rad/s half the limits runs on 0.15 rad (15 rows), into a fixture 0.12 rad ahead; 0.75 of
    # them stops after 0.1 rad (10 rows), short of it and still within the FR3's limits.
    stop, paused, moving_at, _ = _paused_near_a_fixture(0.12, speed=1.0)
    assert paused["stop"] == "smooth at 0.75 of the limits" and "stop_outside" not in paused, paused
    assert len(stop) == 10 and stop[-1][0] == pytest.approx(moving_at[0] + 0.1)
    assert safety_check("fr3")(stop, moving_at, np.eye(7)[0] * 1.0, INTERVAL) == []


def test_a_pause_that_no_stop_keeps_off_a_fixture_stays_within_the_limits_and_says_why():
    from labference_ros.skills.safety_modes import safety_check

    stop, paused, moving_at, _ = _paused_near_a_fixture(0.01)
    assert paused["stop_outside"] == ["hand touches the balance"], paused
    assert paused["stop"] == "smooth at 0.5 of the limits"
    assert safety_check("fr3")(stop, moving_at, np.eye(7)[0] * 0.5, INTERVAL) == []


def test_a_setpoint_at_rest_stops_where_it_is():
    from labference_ros.core.safety import stopping_rows

    assert np.array_equal(stopping_rows(HOME, None, INTERVAL), HOME[None, :])
    assert np.array_equal(stopping_rows(HOME, np.zeros(7), INTERVAL), HOME[None, :])


# The robot's own limits (SafetyEnvelope.for_robot): position range, position-dependent
# velocity, jerk, and the motion the controller interpolates between rows.

FR3_BOX = SafetyEnvelope.for_robot(FR3, (-1.0, -1.0, 0.0), (1.0, 1.0, 1.0))
FR3_HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


def _tips(rows):
    return np.tile([0.4, 0.0, 0.3], (len(rows), 1))


def _smooth(distance, seconds, start=FR3_HOME):
    t = np.arange(1, int(round(seconds / INTERVAL)) + 1) * INTERVAL / seconds
    return start + np.outer(10 * t ** 3 - 15 * t ** 4 + 6 * t ** 5, distance)


def test_a_smooth_move_is_inside_the_fr3_envelope():
    assert FR3_BOX.violations(_smooth([0.6, 0.4, 0, 0, 0, 0, 0], 1.5), FR3_HOME, None, INTERVAL, _tips) == []


def test_a_row_outside_the_fr3_range_of_joint_6_is_refused_though_the_panda_could_go_there():
    start = FR3_HOME.copy()
    start[5] = 0.7
    rows = _smooth([0, 0, 0, 0, 0, -0.4, 0], 2.0, start)  # joint 6 down to 0.3 rad
    reasons = FR3_BOX.violations(rows, start, None, INTERVAL, _tips)
    assert any("joint 6 position" in r and "[0.5445, 4.5169]" in r for r in reasons)
    assert BOX.violations(rows, start, None, INTERVAL, _tips) == []  # the Panda's range reaches -0.0175


def test_a_velocity_step_inside_the_row_limits_is_refused_for_its_jerk_between_rows():
    # 0.15 rad/s at once from standing: 7.5 rad/s^2 from one row to the next, within the
    # FR3's row limits; the controller's interpolation gets there with a jerk beyond 5000.
    rows = FR3_HOME + np.outer(np.arange(1, 11) * 0.003, [1, 0, 0, 0, 0, 0, 0])
    reasons = FR3_BOX.violations(rows, FR3_HOME, None, INTERVAL, _tips)
    assert not any("at row" in r for r in reasons)
    assert any("jerk" in r and "between rows" in r for r in reasons)


def test_the_fr3_velocity_bound_near_a_limit_refuses_a_speed_allowed_elsewhere():
    start = FR3_HOME.copy()
    start[0] = 2.55  # 0.19 rad below joint 1's upper end
    rows = _smooth([0.18, 0, 0, 0, 0, 0, 0], 0.45, start)  # 0.42 rad/s 0.16 rad in, where 0.38 is allowed
    reasons = FR3_BOX.violations(rows, start, None, INTERVAL, _tips)
    assert any("joint 1 velocity" in r and "between rows" in r for r in reasons)
    away = FR3_HOME.copy()
    assert FR3_BOX.violations(_smooth([0.18, 0, 0, 0, 0, 0, 0], 0.45, away), away, None, INTERVAL, _tips) == []
