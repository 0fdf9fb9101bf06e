"""The arm's own moves between episodes on a real rig (pure: numpy and core): homing
before the session and, after each episode, lifting the hand clear and homing again.

- `joint_move`: a point-to-point joint move as one franka_ros2 trajectory message:
  every joint on the same quintic time law (s = 10 t^3 - 15 t^4 + 6 t^5, at rest at
  both ends), points `POINT_SPACING_S` apart with positions, velocities and
  accelerations (the controller's quintic between two points of this law is the law
  itself). Its duration keeps the peak velocity, acceleration and jerk within
  `fraction` of the robot's limits; the motion is then checked at 1 kHz against all
  of them (position range, velocity bounds, position-dependent on the FR3,
  acceleration, jerk; core.safety.motion_problems) and lengthened until it passes. A
  start or goal outside the robot's range, or a move no duration makes pass, is
  refused (`MoveRefused`, its reason).
- `lift_target`: the joints that put the hand `height` straight above where it stands,
  its orientation kept (Franka's kinematics, the same for the Panda and the FR3;
  damped least squares); refused when no such joints are found within the range.
- `MoveWatch`: a sent move until its verdict: "done" once the arm stands at the goal
  after the trajectory's end, "failed: <cause>" on a fault (a reflex, stale joint
  states: devices/franka_arm.FaultWatch) or when the arm has not reached the goal
  `settle_s` after the end.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labference_ros.core.robots import RobotModel
from labference_ros.core.safety import motion_problems
from labference_ros.core.trajectory_commands import StreamState, TrajectoryCommand, message_motion

POINT_SPACING_S = 0.05
SPEED_FRACTION = 0.25  # of each limit: the operator is near the cell between episodes
MIN_DURATION_S = 0.5
AT_GOAL_RAD = 1e-4  # a move shorter than this is no move
# The quintic law's peaks per unit distance and duration: velocity, acceleration, jerk.
PEAK_VELOCITY, PEAK_ACCELERATION, PEAK_JERK = 1.875, 10.0 / np.sqrt(3.0), 60.0

# Franka's kinematics (Craig's convention: a, d, alpha per joint, then the flange),
# the same for the Panda and the FR3.
_DH = ((0.0, 0.333, 0.0), (0.0, 0.0, -np.pi / 2), (0.0, 0.316, np.pi / 2), (0.0825, 0.0, np.pi / 2),
       (-0.0825, 0.384, -np.pi / 2), (0.0, 0.0, np.pi / 2), (0.088, 0.0, np.pi / 2))
_FLANGE_D = 0.107


class MoveRefused(ValueError):
    """A move that is not sent; the message says why."""


def _link(a: float, d: float, alpha: float, theta: float) -> np.ndarray:
    ca, sa, ct, st = np.cos(alpha), np.sin(alpha), np.cos(theta), np.sin(theta)
    return np.array([[ct, -st, 0.0, a], [st * ca, ct * ca, -sa, -d * sa], [st * sa, ct * sa, ca, d * ca],
                     [0.0, 0.0, 0.0, 1.0]])


def flange_pose(q) -> tuple[np.ndarray, np.ndarray]:
    """The flange's position (3,) and rotation (3 x 3) in the robot's base frame at joints q."""
    T = np.eye(4)
    for (a, d, alpha), theta in zip(_DH, np.asarray(q, float)[:7]):
        T = T @ _link(a, d, alpha, theta)
    T = T @ _link(0.0, _FLANGE_D, 0.0, 0.0)
    return T[:3, 3], T[:3, :3]


def _rotation_error(R_goal: np.ndarray, R: np.ndarray) -> np.ndarray:
    """The rotation vector that takes R to R_goal (base frame), small angles exact enough."""
    E = R_goal @ R.T
    return 0.5 * np.array([E[2, 1] - E[1, 2], E[0, 2] - E[2, 0], E[1, 0] - E[0, 1]])


def _range_problem(robot: RobotModel, q: np.ndarray, what: str) -> str:
    lo, hi = np.asarray(robot.lower), np.asarray(robot.upper)
    out = (q < lo) | (q > hi)
    if not out.any():
        return ""
    j = int(np.argmax(out))
    return f"{what}: joint {j + 1} at {q[j]:+.4f} rad outside [{lo[j]}, {hi[j]}] ({robot.name})"


def lift_target(robot: RobotModel, q, height: float, iterations: int = 60) -> np.ndarray:
    """Joints with the flange `height` (m) above where it is at q, its orientation kept."""
    q0 = np.asarray(q, float)[:7]
    problem = _range_problem(robot, q0, "the arm stands outside its range")
    if problem:
        raise MoveRefused(problem)
    p0, R0 = flange_pose(q0)
    goal = p0 + np.array([0.0, 0.0, float(height)])
    x = q0.copy()
    for _ in range(iterations):
        p, R = flange_pose(x)
        error = np.concatenate([goal - p, _rotation_error(R0, R)])
        if np.linalg.norm(error[:3]) < 1e-5 and np.linalg.norm(error[3:]) < 1e-4:
            break
        J = np.zeros((6, 7))
        for j in range(7):
            dx = np.zeros(7)
            dx[j] = 1e-6
            pj, Rj = flange_pose(x + dx)
            J[:3, j] = (pj - p) / 1e-6
            J[3:, j] = _rotation_error(Rj, R) / 1e-6
        x = x + J.T @ np.linalg.solve(J @ J.T + 1e-4 * np.eye(6), error)
    p, R = flange_pose(x)
    if np.linalg.norm(goal - p) > 1e-3 or np.linalg.norm(_rotation_error(R0, R)) > 1e-2:
        raise MoveRefused(f"no joints put the hand {height * 100:g} cm above where it stands (missed by "
                          f"{np.linalg.norm(goal - p) * 1000:.1f} mm)")
    problem = _range_problem(robot, x, f"the hand {height * 100:g} cm higher needs")
    if problem:
        raise MoveRefused(problem)
    return x


def _command(robot: RobotModel, start: np.ndarray, goal: np.ndarray, duration: float) -> TrajectoryCommand:
    steps = max(1, int(np.ceil(duration / POINT_SPACING_S - 1e-9)))
    duration = steps * POINT_SPACING_S
    tau = np.arange(1, steps + 1) / steps
    s = 10 * tau ** 3 - 15 * tau ** 4 + 6 * tau ** 5
    ds = (30 * tau ** 2 - 60 * tau ** 3 + 30 * tau ** 4) / duration
    dds = (60 * tau - 180 * tau ** 2 + 120 * tau ** 3) / duration ** 2
    span = goal - start
    return TrajectoryCommand(robot.arm_joints, tau * duration, start + np.outer(s, span), np.outer(ds, span),
                             np.outer(dds, span))


def joint_move(robot: RobotModel, start, goal, fraction: float = SPEED_FRACTION,
               tries: int = 8) -> TrajectoryCommand | None:
    """The message that moves the arm at rest at `start` to rest at `goal` within the robot's
    limits (None: already there); MoveRefused with the reason when there is none."""
    start, goal = np.asarray(start, float)[:7], np.asarray(goal, float)[:7]
    for q, what in ((start, "the arm stands outside its range"), (goal, "the goal is outside the range")):
        problem = _range_problem(robot, q, what)
        if problem:
            raise MoveRefused(problem)
    distance = np.abs(goal - start)
    if distance.max() < AT_GOAL_RAD:
        return None
    v, a, j = (np.asarray(x) * fraction for x in (robot.max_velocity, robot.max_acceleration, robot.max_jerk))
    duration = max(MIN_DURATION_S, float(np.max(PEAK_VELOCITY * distance / v)),
                   float(np.max(np.sqrt(PEAK_ACCELERATION * distance / a))),
                   float(np.max(np.cbrt(PEAK_JERK * distance / j))))
    problems: list[str] = []
    for _ in range(tries):
        command = _command(robot, start, goal, duration)
        problems = motion_problems(robot, message_motion(StreamState.at_rest(start), command))
        if not problems:
            return command
        duration *= 1.5
    raise MoveRefused(f"no move within the {robot.name}'s limits: {problems[0]}")


@dataclass
class MoveWatch:
    """A sent move (`action` of `episode_id`, '' for the session) until its verdict."""
    episode_id: str
    action: str
    goal: np.ndarray
    ends: float  # when the trajectory ends (the watch's clock)
    settle_s: float = 1.0
    tolerance_rad: float = 5e-3

    def verdict(self, now: float, measured, fault: str) -> str | None:
        """None while the move goes on; "done"; or "failed: <cause>"."""
        if fault:
            return f"failed: {fault}"
        if now < self.ends or measured is None:
            return None
        error = np.abs(np.asarray(measured, float)[:7] - self.goal)
        if error.max() <= self.tolerance_rad:
            return "done"
        if now < self.ends + self.settle_s:
            return None
        j = int(np.argmax(error))
        return (f"failed: the arm did not reach its goal {self.settle_s:g} s after the move's end: joint {j + 1} "
                f"at {measured[j]:+.4f} rad, goal {self.goal[j]:+.4f} rad")
