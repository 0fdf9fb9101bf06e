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
  states: devices/franka_arm.FaultWatch) or when a joint state `settle_s` after the
  end finds the arm short of the goal.
- `ArmChores`: what the arm does between episodes, in order: homing before the
  session; after each episode, once the hand released what it held (or
  `release_wait_s` passed), the lift and then homing. Each step's verdict is an event
  (episode id, '' for the session; action `lift` or `home`; detail `done`,
  `refused: <reason>` or `failed: <cause>`); a step after one that was refused or
  failed is not tried and says so (`not done: ...`), so the homing is never silently
  skipped.
"""
from __future__ import annotations

from dataclasses import dataclass, field

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

    def verdict(self, measured, measured_at: float, fault: str) -> str | None:
        """None while the move goes on; "done"; or "failed: <cause>". Judged on the joint
        state `measured` at `measured_at` (the watch's clock), never on one from before the
        end: joint states that stop are the fault watch's to say."""
        if fault:
            return f"failed: {fault}"
        if measured is None or measured_at < self.ends:
            return None
        error = np.abs(np.asarray(measured, float)[:7] - self.goal)
        if error.max() <= self.tolerance_rad:
            return "done"
        if measured_at < self.ends + self.settle_s:
            return None
        j = int(np.argmax(error))
        return (f"failed: the arm did not reach its goal {self.settle_s:g} s after the move's end: joint {j + 1} "
                f"at {measured[j]:+.4f} rad, goal {self.goal[j]:+.4f} rad")


LIFT, HOME = "lift", "home"


@dataclass
class ArmChores:
    robot: RobotModel
    home: np.ndarray
    lift_m: float = 0.05
    release_wait_s: float = 10.0
    steps: list[tuple[str, str]] = field(default_factory=list)  # (episode id, action) still to do
    ended: dict[str, float] = field(default_factory=dict)  # episode id -> when it ended
    released: set[str] = field(default_factory=set)  # episodes whose hand released
    move: MoveWatch | None = None

    def __post_init__(self) -> None:
        home = np.asarray(self.home, float).ravel()
        if home.shape != (7,) or not np.isfinite(home).all():
            raise ValueError(f"home must be 7 joint positions in rad, got {[float(x) for x in np.ravel(self.home)]}")
        if not 0.0 < self.lift_m <= 0.3:
            raise ValueError(f"lift_m must be in (0, 0.3] m, got {self.lift_m}")
        if self.release_wait_s < 0:
            raise ValueError(f"release_wait_s must be >= 0, got {self.release_wait_s}")
        self.home = home

    def session(self) -> None:
        self.steps.append(("", HOME))

    def episode_ended(self, episode_id: str, now: float) -> None:
        if episode_id not in self.ended:
            self.ended[episode_id] = now
            self.steps += [(episode_id, LIFT), (episode_id, HOME)]

    def hand_released(self, episode_id: str) -> None:
        self.released.add(episode_id)

    @property
    def busy(self) -> bool:
        return self.move is not None

    def tick(self, now: float, measured, measured_at: float, moving: bool, fault: str
             ) -> tuple[list[tuple[str, str, str]], TrajectoryCommand | None]:
        """(events, the message to send or None) at `now` with the arm `measured` at `measured_at`
        (None before the first joint state), `moving` (not yet at rest) and the fault the watch
        sees ('')."""
        if self.move is not None:
            verdict = self.move.verdict(measured, measured_at, fault)
            if verdict is None:
                return [], None
            move, self.move = self.move, None
            events = [(move.episode_id, move.action, verdict)]
            if verdict != "done":
                events += self._drop(move.episode_id, f"not done: the {move.action} {verdict}")
            return events, None
        if not self.steps or measured is None or (moving and not fault):
            return [], None
        eid, action = self.steps[0]
        if eid and eid not in self.released and now < self.ended[eid] + self.release_wait_s:
            return [], None  # the hand lets go first
        self.steps.pop(0)
        try:
            if fault:
                raise MoveRefused(f"the arm is not ready: {fault}")
            goal = np.asarray(self.home, float) if action == HOME else lift_target(self.robot, measured, self.lift_m)
            command = joint_move(self.robot, measured, goal)
        except MoveRefused as exc:
            return [(eid, action, f"refused: {exc}")] + self._drop(eid, f"not done: the {action} was refused"), None
        if command is None:
            return [(eid, action, "done (already there)")], None
        self.move = MoveWatch(eid, action, goal, now + float(command.times[-1]))
        return [], command

    def _drop(self, episode_id: str, why: str) -> list[tuple[str, str, str]]:
        dropped = [(e, a, why) for e, a in self.steps if e == episode_id]
        self.steps = [(e, a) for e, a in self.steps if e != episode_id]
        return dropped
