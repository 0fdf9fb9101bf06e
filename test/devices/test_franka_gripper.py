"""The graph's gripper command as franka_gripper goals (devices/franka_gripper.py). The
bridge node against a hand's actions: test/nodes/test_franka_rig.py."""
from __future__ import annotations


import pytest

from labference_ros.devices.franka_gripper import (GRASP, MOVE, GoalSequencer, GripperCommandRejected,
                                                   GripperGoal, goal_for)


def test_a_move_and_a_grasp_become_their_actions_goals():
    move = goal_for(grasp=False, width=0.08, speed=0.1, force=30.0, epsilon_inner=0.005, epsilon_outer=0.005)
    assert move == GripperGoal(MOVE, 0.08, 0.1)  # force and epsilons mean nothing to Move
    grasp = goal_for(grasp=True, width=0.031, speed=0.05, force=20.0, epsilon_inner=0.004, epsilon_outer=0.006)
    assert grasp == GripperGoal(GRASP, 0.031, 0.05, 20.0, 0.004, 0.006)


@pytest.mark.parametrize("fields, needle", [
    ({"width": 0.09}, "gripper width 0.09 outside [0, 0.08]"),
    ({"grasp": True, "force": 80.0}, "grasp force 80.0 outside (0, 70.0] N"),
    ({"grasp": True, "force": 0.0}, "grasp force 0.0 outside"),
    ({"speed": 0.0}, "gripper speed must be positive"),
    ({"width": float("nan")}, "gripper width is not finite"),
    ({"epsilon_inner": -0.001}, "epsilons must be non-negative"),
])
def test_a_command_outside_the_hands_ranges_is_refused_with_its_reason(fields, needle):
    command = {"grasp": False, "width": 0.04, "speed": 0.1, "force": 20.0, "epsilon_inner": 0.005,
               "epsilon_outer": 0.005, **fields}
    with pytest.raises(GripperCommandRejected) as refused:
        goal_for(**command)
    assert needle in str(refused.value)


def test_a_repeated_command_sends_one_goal_and_a_failed_one_is_sent_again():
    sequencer = GoalSequencer()
    open_hand = goal_for(False, 0.08, 0.1, 0.0, 0.005, 0.005)
    close_on = goal_for(True, 0.03, 0.05, 20.0, 0.005, 0.005)
    sent = [sequencer.next_goal(g) for g in (open_hand, open_hand, close_on, close_on, close_on)]
    assert sent == [open_hand, None, close_on, None, None]
    sequencer.forget()  # the grasp failed
    assert sequencer.next_goal(close_on) == close_on
    assert sequencer.next_goal(open_hand) == open_hand
