"""The arm's homing and retreat moves (pure): checked at 1 kHz against the FR3's limits and
executed by the franka_ros2 stand-in's arm, which raises a reflex as the robot would."""
from __future__ import annotations

import numpy as np
import pytest

from labference_ros.cell.description import common_cell
from labference_ros.core.robots import FR3, PANDA
from labference_ros.core.safety import motion_problems
from labference_ros.core.trajectory_commands import StreamState, message_motion
from labference_ros.devices.arm_moves import (SPEED_FRACTION, ArmChores, MoveRefused, MoveWatch, _command,
                                              flange_pose, joint_move, lift_target)
from labference_ros.devices.franka_arm import ArmStandIn

HOME = np.array(common_cell().robot.home)
# Far from home, and near the FR3's position-dependent velocity bounds (joint 6 near its lower end,
# joint 4 near its upper end: the allowed speed towards those ends falls to zero there).
STARTS = ([1.2, -1.0, 0.8, -2.6, 1.5, 3.2, 1.9],
          [-2.5, 1.5, -2.6, -0.25, -2.5, 0.6, -2.9],
          [0.0, 0.3, 0.0, -1.2, 0.0, 1.2, 0.0])


def _execute(robot, start, command):
    """The stand-in's arm runs the message from rest at start (a zero stamp: from receipt)."""
    arm = ArmStandIn(robot, start)
    arm.command(command.times, command.positions, command.velocities, command.accelerations)
    arm.advance(command.times[-1] + 0.5)
    return arm


@pytest.mark.parametrize("start", STARTS)
def test_a_homing_move_keeps_every_fr3_limit_at_1_khz_and_reaches_home_without_a_reflex(start):
    start = np.array(start)
    command = joint_move(FR3, start, HOME)
    assert len(command.times) > 2 and command.velocities.shape == command.accelerations.shape == (len(command.times), 7)
    assert np.allclose(np.diff(command.times), 0.05) and np.allclose(command.positions[-1], HOME)
    assert np.allclose(command.velocities[-1], 0) and np.allclose(command.accelerations[-1], 0)
    motion = message_motion(StreamState.at_rest(start), command)
    assert motion_problems(FR3, motion) == []
    # The peaks keep the speed fraction of each limit (the operator is near between episodes).
    for values, limit in ((motion.velocities, FR3.max_velocity), (motion.accelerations, FR3.max_acceleration),
                          (motion.jerks, FR3.max_jerk)):
        assert (np.abs(values).max(axis=0) <= np.asarray(limit) * SPEED_FRACTION * 1.01).all()
    arm = _execute(FR3, start, command)
    assert arm.error == "", arm.error_detail
    assert np.allclose(arm.q, HOME, atol=1e-6) and np.allclose(arm.dq, 0)


def test_the_same_move_sent_faster_than_the_limits_allow_trips_the_stand_ins_reflex():
    # What the check and the duration prevent: 1.5 rad in 0.3 s.
    start = np.array(STARTS[0])
    fast = _command(FR3, start, HOME, 0.3)
    assert motion_problems(FR3, message_motion(StreamState.at_rest(start), fast))
    assert _execute(FR3, start, fast).error != ""


def test_a_move_near_the_velocity_bound_is_lengthened_until_it_passes_the_1_khz_check():
    # At the full limits the quintic's velocity peak (sized by v_max) meets joint 6's position-dependent
    # bound near its lower end: the move is lengthened, not sent as it is.
    start = HOME.copy()
    goal = HOME.copy()
    goal[5] = 0.56
    assert motion_problems(FR3, message_motion(StreamState.at_rest(start), _command(FR3, start, goal, 1.0)))
    command = joint_move(FR3, start, goal, fraction=1.0)
    assert command.times[-1] > 1.0  # a second is still too short there (the 1 kHz check said so)
    assert motion_problems(FR3, message_motion(StreamState.at_rest(start), command)) == []
    assert _execute(FR3, start, command).error == ""


def test_a_move_out_of_the_robots_range_is_refused_with_its_reason():
    panda_home = HOME.copy()
    panda_home[5] = 0.2  # inside the Panda's joint 6 range, outside the FR3's [0.5445, 4.5169]
    assert joint_move(PANDA, HOME, panda_home) is not None
    with pytest.raises(MoveRefused, match=r"the goal is outside the range: joint 6 at \+0.2000 rad outside "
                                          r"\[0.5445, 4.5169\] \(fr3\)"):
        joint_move(FR3, HOME, panda_home)
    with pytest.raises(MoveRefused, match="the arm stands outside its range: joint 6"):
        joint_move(FR3, panda_home, HOME)
    with pytest.raises(MoveRefused, match="the arm stands outside its range: joint 6"):
        lift_target(FR3, panda_home, 0.05)
    assert joint_move(FR3, HOME, HOME + 1e-6) is None  # already there: no move


def test_the_lift_raises_the_hand_straight_up_with_its_orientation_kept():
    from labference_ros.skills.ee_ik import HandKinematics

    lifted = lift_target(FR3, HOME, 0.05)
    (p0, R0), (p1, R1) = flange_pose(HOME), flange_pose(lifted)
    assert np.allclose(p1 - p0, [0, 0, 0.05], atol=1e-4) and np.allclose(R1, R0, atol=1e-3)
    # The simulator's own model of the arm (MuJoCo Menagerie's) agrees: its fingertip centre rose 5 cm.
    hand = HandKinematics()
    (s0, S0), (s1, S1) = hand.pose(HOME), hand.pose(lifted)
    assert np.allclose(s1 - s0, [0, 0, 0.05], atol=5e-4) and np.allclose(S1, S0, atol=5e-3)
    command = joint_move(FR3, HOME, lifted)
    assert _execute(FR3, HOME, command).error == ""
    # Where no joints reach that high, the lift is refused with the reason.
    stretched = np.array([0.0, 1.2, 0.0, -0.2, 0.0, 1.6, 0.0])
    with pytest.raises(MoveRefused, match="cm higher needs|no joints put the hand 50 cm above"):
        lift_target(FR3, stretched, 0.5)


def test_the_move_watch_says_done_or_why_the_move_failed():
    watch = MoveWatch("e1", "home", HOME, ends=10.0, settle_s=1.0)
    assert watch.verdict(HOME + 0.1, 9.0, "") is None  # still moving
    assert watch.verdict(HOME, 9.9, "") is None  # a joint state from before the end is not judged
    assert watch.verdict(HOME + 1e-3, 10.0, "") == "done"
    assert watch.verdict(HOME + 0.1, 10.5, "") is None  # settling
    stuck = HOME.copy()
    stuck[3] += 0.2
    assert watch.verdict(stuck, 11.2, "") == ("failed: the arm did not reach its goal 1 s after the move's end: "
                                             "joint 4 at -1.3708 rad, goal -1.5708 rad")
    assert watch.verdict(HOME, 5.0, "joint states stale: none for 2.10 s (limit 2.0 s)") == (
        "failed: joint states stale: none for 2.10 s (limit 2.0 s)")


def test_the_chores_home_before_the_session_and_lift_then_home_after_the_hand_released():
    chores = ArmChores(FR3, HOME, lift_m=0.05, release_wait_s=5.0)
    start = np.array(STARTS[2])
    chores.session()
    assert chores.tick(0.0, None, 0.0, False, "") == ([], None)  # no joint state yet
    events, command = chores.tick(0.0, start, 0.0, False, "")
    assert events == [] and np.allclose(command.positions[-1], HOME) and chores.busy
    ends = float(command.times[-1])
    assert chores.tick(ends + 0.1, HOME, ends + 0.1, False, "") == ([("", "home", "done")], None)
    chores.episode_ended("e1", 20.0)
    assert chores.tick(21.0, HOME, 21.0, False, "") == ([], None)  # the hand lets go first
    chores.hand_released("e1")
    assert chores.tick(21.1, HOME, 21.1, True, "") == ([], None)  # not yet at rest
    events, lift = chores.tick(21.2, HOME, 21.2, False, "")
    lifted = lift.positions[-1]
    assert events == [] and np.allclose(flange_pose(lifted)[0] - flange_pose(HOME)[0], [0, 0, 0.05], atol=1e-4)
    t = 21.2 + float(lift.times[-1])
    assert chores.tick(t, lifted, t, False, "") == ([("e1", "lift", "done")], None)
    events, home = chores.tick(t, lifted, t, False, "")
    assert np.allclose(home.positions[-1], HOME)
    assert chores.tick(t + 0.5, lifted, t + 0.5, False, "joint states stale: none for 2.10 s (limit 2.0 s)") == (
        [("e1", "home", "failed: joint states stale: none for 2.10 s (limit 2.0 s)")], None)
    # Without a release the wait ends after release_wait_s; a fault then refuses the lift with its
    # reason, and the homing after it says it was not done.
    chores.episode_ended("e2", 40.0)
    assert chores.tick(44.0, lifted, 44.0, False, "") == ([], None)
    assert chores.tick(45.0, lifted, 45.0, False, "robot error: joint_reflex (robot mode reflex)") == ([
        ("e2", "lift", "refused: the arm is not ready: robot error: joint_reflex (robot mode reflex)"),
        ("e2", "home", "not done: the lift was refused")], None)
    assert not chores.steps and not chores.busy


@pytest.mark.parametrize("home, lift, message", [([0.0] * 6, 0.05, "home must be 7 joint positions"),
                                                 (list(HOME), 0.0, r"lift_m must be in \(0, 0.3\] m, got 0.0")])
def test_bad_chore_settings_are_one_clear_error(home, lift, message):
    with pytest.raises(ValueError, match=message):
        ArmChores(FR3, home, lift_m=lift)
