"""Checks on robot commands before they reach the simulated (or real) arm.

The lab_sim node calls these with the joint names and positions of a
JointTrajectory point; a rejected command is never applied and the reason is
reported, so a bad policy output cannot fling the arm.
"""
from __future__ import annotations

import math
from typing import Sequence

from labference_ros.core.safety import gripper_command_problem
from labference_ros.sim.backend import ARM_JOINT_NAMES, CommandCheck

# Franka Panda joint position limits, rad (datasheet; same as the Menagerie model).
PANDA_ARM_LIMITS: dict[str, tuple[float, float]] = {
    "panda_joint1": (-2.8973, 2.8973),
    "panda_joint2": (-1.7628, 1.7628),
    "panda_joint3": (-2.8973, 2.8973),
    "panda_joint4": (-3.0718, -0.0698),
    "panda_joint5": (-2.8973, 2.8973),
    "panda_joint6": (-0.0175, 3.7525),
    "panda_joint7": (-2.8973, 2.8973),
}


def validate_arm_command(names: Sequence[str], positions: Sequence[float],
                         limits: dict[str, tuple[float, float]] = PANDA_ARM_LIMITS
                         ) -> tuple[CommandCheck, tuple[float, ...]]:
    """Returns (check, positions ordered as panda_joint1..7). Names may come
    in any order but must be exactly the seven arm joints."""
    names = tuple(names)
    try:
        values = [float(p) for p in positions]
    except (TypeError, ValueError):
        return CommandCheck(False, "positions are not numbers"), ()
    if len(names) != len(values):
        return CommandCheck(False, f"{len(names)} joint names but {len(values)} positions"), ()
    if len(values) != len(ARM_JOINT_NAMES):
        return CommandCheck(False, f"expected {len(ARM_JOINT_NAMES)} arm joints, got {len(values)}"), ()
    if len(set(names)) != len(names):
        return CommandCheck(False, "duplicate joint names"), ()
    unknown = [n for n in names if n not in limits]
    if unknown:
        return CommandCheck(False, f"unknown joints {unknown}; expected {list(ARM_JOINT_NAMES)}"), ()
    by_name = dict(zip(names, values))
    ordered = tuple(by_name[n] for n in ARM_JOINT_NAMES)
    check = check_ordered_arm_targets(ordered, limits)
    return (check, ordered) if check.ok else (check, ())


def check_ordered_arm_targets(ordered: Sequence[float],
                              limits: dict[str, tuple[float, float]] = PANDA_ARM_LIMITS) -> CommandCheck:
    """validate_arm_command's per-joint checks on seven floats already in panda_joint1..7
    order: lab_sim checks every interpolated target (one per physics step) with this alone."""
    if len(ordered) != len(ARM_JOINT_NAMES):
        return CommandCheck(False, f"expected {len(ARM_JOINT_NAMES)} arm joints, got {len(ordered)}")
    for name, q in zip(ARM_JOINT_NAMES, ordered):
        if not math.isfinite(q):
            return CommandCheck(False, f"{name} target is not finite ({q})")
        lo, hi = limits[name]
        if not lo <= q <= hi:
            return CommandCheck(False, f"{name} target {q:.4f} outside limits [{lo}, {hi}]")
    return _ACCEPTED


_ACCEPTED = CommandCheck(True)


def validate_gripper_command(width: float, speed: float, force: float,
                             epsilon_inner: float, epsilon_outer: float,
                             grasp: bool) -> CommandCheck:
    problem = gripper_command_problem(width, speed, force, epsilon_inner, epsilon_outer, grasp)
    return CommandCheck(not problem, problem)
