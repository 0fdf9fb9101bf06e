"""The safety envelope a chunk must stay inside before any row reaches the arm.

On a real Franka the controllers abort (a reflex) on a discontinuous command,
and a policy can steer the hand into the table or out of the cell. The policy
bridge therefore checks every accepted chunk, with the robot state it was
computed from, before queuing a row: joint velocity and acceleration between
consecutive targets one hold interval apart, continuing from the last target
commanded and its velocity (the measured position and rest before the first:
a trajectory controller interpolates from its setpoint, which the measured
position lags while moving), and the fingertip centre of every row inside a
workspace box. A violation rejects the whole chunk (the arm holds) and the chunk record
keeps the reason. Off by default in simulation (the scored protocol of the
existing runs stays as it was); the real and rehearsal graphs turn it on.

Limits: Franka Emika Panda datasheet (joint velocity and acceleration maxima).
`SafetyEnvelope.for_robot` takes them from a robot model (core.robots) instead and
adds what the arm itself checks on every controller cycle: the position limits,
the velocity bounds (position-dependent on an FR3) and the jerk, on the rows and
on the motion between them as the controller interpolates it
(core.trajectory_commands.executed_motion, sampled at 1 kHz).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from labference_ros.core.action_spec import PANDA_JOINT_NAMES
from labference_ros.core.robots import PANDA, RobotModel
from labference_ros.core.trajectory_commands import CONTROLLER_RATE_HZ, Motion, StreamState, executed_motion

PANDA_MAX_VELOCITY = PANDA.max_velocity  # rad/s
PANDA_MAX_ACCELERATION = PANDA.max_acceleration  # rad/s^2
ARM_JOINTS = len(PANDA_JOINT_NAMES)  # the arm's columns of a reference row
GRIPPER_MAX_WIDTH = 0.08  # m, Franka Hand
GRIPPER_MAX_FORCE = 70.0  # N, Franka Hand continuous grasp force


def gripper_command_problem(width: float, speed: float, force: float, epsilon_inner: float,
                            epsilon_outer: float, grasp: bool) -> str:
    """Why a Franka-Hand command (move to width, or grasp with force) may not be sent;
    "" when it may. The simulator and the real gripper's bridge both ask here."""
    values = {"width": width, "speed": speed, "force": force,
              "epsilon_inner": epsilon_inner, "epsilon_outer": epsilon_outer}
    for name, value in values.items():
        if value is None or not math.isfinite(float(value)):
            return f"gripper {name} is not finite ({value})"
    if not 0.0 <= width <= GRIPPER_MAX_WIDTH:
        return f"gripper width {width} outside [0, {GRIPPER_MAX_WIDTH}]"
    if speed <= 0.0:
        return f"gripper speed must be positive, got {speed}"
    if epsilon_inner < 0 or epsilon_outer < 0:
        return "gripper epsilons must be non-negative"
    if grasp and not 0.0 < force <= GRIPPER_MAX_FORCE:
        return f"grasp force {force} outside (0, {GRIPPER_MAX_FORCE}] N"
    return ""


@dataclass(frozen=True)
class SafetyEnvelope:
    workspace_min: tuple[float, float, float]  # fingertip centre, robot base frame, metres
    workspace_max: tuple[float, float, float]
    max_velocity: tuple[float, ...] = PANDA_MAX_VELOCITY
    max_acceleration: tuple[float, ...] = PANDA_MAX_ACCELERATION
    # Where set (for_robot): the robot whose position limits, velocity bounds and jerk the
    # rows and the interpolated motion between them must keep.
    robot: RobotModel | None = None

    @classmethod
    def for_robot(cls, robot: RobotModel, workspace_min, workspace_max) -> "SafetyEnvelope":
        return cls(workspace_min=tuple(workspace_min), workspace_max=tuple(workspace_max),
                   max_velocity=robot.max_velocity, max_acceleration=robot.max_acceleration, robot=robot)

    def violations(self, rows: np.ndarray, start: np.ndarray, start_velocity: np.ndarray | None,
                   interval_s: float, fingertips: Callable[[np.ndarray], np.ndarray]) -> list[str]:
        """Reasons the chunk leaves the envelope (empty: inside). `rows` are absolute
        targets (L x dim, arm joints first); `start` and `start_velocity` are the
        setpoint the first row continues from and its velocity (None: at rest);
        `fingertips` maps arm rows (L x 7) to fingertip centres (L x 3)."""
        arm = np.asarray(rows, float)[:, :ARM_JOINTS]
        path = np.vstack([np.asarray(start, float)[:ARM_JOINTS], arm])
        velocity = np.diff(path, axis=0) / interval_s
        reasons = []
        over = np.abs(velocity) > np.asarray(self.max_velocity)
        if over.any():
            r, j = (int(v) for v in np.argwhere(over)[0])
            reasons.append(f"joint {j + 1} velocity {velocity[r, j]:+.3f} rad/s at row {r} over the limit "
                           f"{self.max_velocity[j]} rad/s")
        before = np.zeros(ARM_JOINTS) if start_velocity is None else np.asarray(start_velocity, float)[:ARM_JOINTS]
        acceleration = np.diff(np.vstack([before, velocity]), axis=0) / interval_s
        over = np.abs(acceleration) > np.asarray(self.max_acceleration)
        if over.any():
            r, j = (int(v) for v in np.argwhere(over)[0])
            reasons.append(f"joint {j + 1} acceleration {acceleration[r, j]:+.2f} rad/s^2 at row {r} "
                           f"over the limit {self.max_acceleration[j]} rad/s^2")
        if self.robot is not None:
            reasons += self._robot_violations(arm, path, velocity, before, interval_s)
        tips = np.asarray(fingertips(arm), float)
        lo, hi = np.asarray(self.workspace_min), np.asarray(self.workspace_max)
        outside = ((tips < lo) | (tips > hi)).any(axis=1)
        if outside.any():
            r = int(np.argmax(outside))
            x, y, z = tips[r]
            reasons.append(f"fingertips at ({x:.3f}, {y:.3f}, {z:.3f}) m at row {r} outside the workspace box "
                           f"{tuple(self.workspace_min)}..{tuple(self.workspace_max)}")
        return reasons


    def _robot_violations(self, arm, path, velocity, before, interval_s) -> list[str]:
        """The robot's own limits on the rows and on the motion the controller interpolates
        between them: position range, (position-dependent) velocity, acceleration, jerk."""
        robot = self.robot
        reasons = []
        lo, hi = np.asarray(robot.lower), np.asarray(robot.upper)
        out = (arm < lo) | (arm > hi)
        if out.any():
            r, j = (int(v) for v in np.argwhere(out)[0])
            reasons.append(f"joint {j + 1} position {arm[r, j]:+.4f} rad at row {r} outside "
                           f"[{lo[j]}, {hi[j]}] ({robot.name})")
        start = path[0]
        state = StreamState(start - before * interval_s, start, before, np.zeros(len(start)))
        return reasons + motion_problems(robot, executed_motion(state, arm, interval_s), "between rows")


def motion_problems(robot: RobotModel, motion: Motion, where: str = "") -> list[str]:
    """Where a commanded motion sampled at the controller's rate leaves the robot's limits
    (position range, velocity bounds, acceleration, jerk): the first sample of each kind."""
    lo, hi = np.asarray(robot.lower), np.asarray(robot.upper)
    down, up = robot.velocity_bounds(motion.positions)
    amax, jmax = np.asarray(robot.max_acceleration), np.asarray(robot.max_jerk)
    checks = (("position", motion.positions, lo, hi, "rad"), ("velocity", motion.velocities, down, up, "rad/s"),
              ("acceleration", motion.accelerations, -amax, amax, "rad/s^2"),
              ("jerk", motion.jerks, -jmax, jmax, "rad/s^3"))
    reasons = []
    for quantity, values, low, high, unit in checks:
        low, high = np.broadcast_to(low, values.shape), np.broadcast_to(high, values.shape)
        over = (values < low - 1e-9) | (values > high + 1e-9)
        if over.any():
            k, j = (int(v) for v in np.argwhere(over)[0])
            at = (f"between rows {int(motion.row[k]) - 1} and {int(motion.row[k])}" if where == "between rows"
                  else f"at {motion.times[k]:.3f} s")
            reasons.append(f"joint {j + 1} {quantity} {values[k, j]:+.3f} {unit} {at} outside "
                           f"[{low[k, j]:.3f}, {high[k, j]:.3f}] ({robot.name}, {CONTROLLER_RATE_HZ:.0f} Hz interpolation)")
    return reasons


def stopping_rows(start: np.ndarray, velocity: np.ndarray | None, interval_s: float,
                  max_acceleration=PANDA_MAX_ACCELERATION, fraction: float = 0.5) -> np.ndarray:
    """Targets one interval apart that bring a setpoint moving at `velocity` to rest,
    every joint decelerating together at no more than `fraction` of its limit
    (a pause stops the arm without the jolt of holding the last target). At rest
    (velocity None or zero): the start alone."""
    start = np.asarray(start, float)[:ARM_JOINTS]
    if velocity is None or not np.any(velocity):
        return start[None, :]
    v = np.asarray(velocity, float)[:ARM_JOINTS]
    duration = float(np.max(np.abs(v) / (np.asarray(max_acceleration) * fraction)))
    steps = max(1, int(np.ceil(duration / interval_s)))
    duration = steps * interval_s
    t = np.arange(1, steps + 1)[:, None] * interval_s
    return start + v * (t - t * t / (2 * duration))


def smooth_stopping_rows(start: np.ndarray, velocity: np.ndarray, interval_s: float, max_acceleration,
                         fraction: float, min_rows: int = 5) -> np.ndarray:
    """Like stopping_rows, with the velocity ramped down along a smoothstep, so the
    deceleration starts and ends at zero: a controller interpolating the rows keeps within
    `fraction` of the robot's limits (peak deceleration 1.5 v / duration), where a constant
    deceleration's sudden start overshoots them between the first rows. At least `min_rows`
    rows: a shorter stop is too coarse for the interpolation to stay that smooth."""
    start = np.asarray(start, float)[:ARM_JOINTS]
    v = np.asarray(velocity, float)[:ARM_JOINTS]
    duration = float(np.max(1.5 * np.abs(v) / (np.asarray(max_acceleration) * fraction)))
    steps = max(min_rows, int(np.ceil(duration / interval_s - 1e-9)))  # 0.2 / 0.02 is 10 rows, not 11
    duration = steps * interval_s
    tau = np.arange(1, steps + 1)[:, None] * interval_s / duration
    # The integral of v (1 - 3 tau^2 + 2 tau^3) over time.
    return start + v * duration * (tau - tau ** 3 + tau ** 4 / 2)
