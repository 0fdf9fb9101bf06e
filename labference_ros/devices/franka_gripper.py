"""The graph's gripper command as goals of franka_gripper's actions (pure).

The policy bridge publishes a Franka-style GripperCommand on
/panda_gripper/command (msg/GripperCommand.msg): move to a width, or grasp an
object of about that width with a force, within inner and outer epsilons. On a
real Panda the franka_gripper node offers the same two things as actions:
franka_msgs/action/Move (width, speed) and franka_msgs/action/Grasp (width,
epsilon.inner, epsilon.outer, speed, force). This module decides which goal a
command becomes and when a new goal is due; the node
(nodes/franka_gripper_bridge.py) sends it.

A command that repeats the goal in progress sends nothing: the bridge publishes
its gripper command with every control row, and a new goal would preempt the
one the hand is executing.
"""
from __future__ import annotations

from dataclasses import dataclass

from labference_ros.core.safety import gripper_command_problem

MOVE = "move"
GRASP = "grasp"


@dataclass(frozen=True)
class GripperGoal:
    action: str  # MOVE or GRASP
    width: float  # metres between the fingers
    speed: float  # m/s
    force: float = 0.0  # N (GRASP only)
    epsilon_inner: float = 0.0  # m (GRASP only)
    epsilon_outer: float = 0.0  # m (GRASP only)


class GripperCommandRejected(ValueError):
    """A command the hand must not get; the message names the field and its range."""


def goal_for(grasp: bool, width: float, speed: float, force: float, epsilon_inner: float,
             epsilon_outer: float) -> GripperGoal:
    problem = gripper_command_problem(width, speed, force, epsilon_inner, epsilon_outer, grasp)
    if problem:
        raise GripperCommandRejected(problem)
    if grasp:
        return GripperGoal(GRASP, float(width), float(speed), float(force), float(epsilon_inner),
                           float(epsilon_outer))
    return GripperGoal(MOVE, float(width), float(speed))


@dataclass
class GoalSequencer:
    """Turns the stream of commands into the goals to send: the first one, then
    only those that differ from the last goal sent."""

    last: GripperGoal | None = None

    def next_goal(self, goal: GripperGoal) -> GripperGoal | None:
        if goal == self.last:
            return None
        self.last = goal
        return goal

    def forget(self) -> None:
        """After a failed or cancelled goal, the same command is due again."""
        self.last = None
