"""A Franka arm under franka_ros2, as far as this project meets it (pure: numpy and core).

- `ArmStandIn`: what the robot PC does with the trajectory messages it is sent. It
  interpolates them as franka_ros2's joint_trajectory_controller does (a message
  stamped zero starts on receipt, from the current setpoint; linearly between
  points with positions only, cubic with velocities, quintic with accelerations
  too; the last point is held), commands the result at 1 kHz, and checks each
  cycle as the arm does: position range, velocity bounds (position-dependent on
  the FR3), and a velocity or acceleration that jumps faster than the acceleration
  or jerk limit allows. A violation is a reflex: the arm stops where it is, the
  error stays set and the robot mode is REFLEX until the error is recovered.
- `FaultWatch`: the evaluation side's view of the same arm: a joint-state stream
  that stopped, a robot mode other than MOVE while an episode runs (a reflex, the
  user stop, no controller commanding the arm), an error flag the robot state
  carries. Each is a hardware fault, never the tested system's failure.
- `CommandGate`: the graph's rows as the messages the arm may take (core.trajectory_commands
  .RowStream, each message's motion checked at 1 kHz against the robot's limits before it
  goes out). A row that comes late or after a gap, whose path the arm could not follow
  within its limits, is the tested system's lateness, not a fault of the arm: nothing is
  sent, so the last message's tail (checked when it went out) brings the arm to rest and
  the controller holds it there. So is a message that fails later on a path a late row or
  a gap began. The late rows that follow stay refused; the first other row the arm can
  follow (from where it stands) resumes the stream. Only rows on time since the stream
  began that the arm cannot follow are a broken command stream.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from labference_ros.core.robots import RobotModel
from labference_ros.core.safety import motion_problems
from labference_ros.core.trajectory_commands import (
    DELIVERY_S,
    RowStream,
    TrajectoryCommand,
    message_motion,
    quintic,
)

CYCLE_S = 0.001  # libfranka's control cycle
# franka_msgs/msg/FrankaRobotState robot_mode values
ROBOT_MODE_OTHER, ROBOT_MODE_IDLE, ROBOT_MODE_MOVE, ROBOT_MODE_GUIDING = 0, 1, 2, 3
ROBOT_MODE_REFLEX, ROBOT_MODE_USER_STOPPED, ROBOT_MODE_AUTOMATIC_ERROR_RECOVERY = 4, 5, 6
ROBOT_MODE_NAMES = {0: "other", 1: "idle", 2: "move", 3: "guiding", 4: "reflex", 5: "user_stopped",
                    6: "automatic_error_recovery"}
# The franka_msgs/msg/Errors fields the stand-in raises.
POSITION_LIMITS = "joint_motion_generator_position_limits_violation"
VELOCITY_LIMITS = "joint_motion_generator_velocity_limits_violation"
VELOCITY_DISCONTINUITY = "joint_motion_generator_velocity_discontinuity"
ACCELERATION_DISCONTINUITY = "joint_motion_generator_acceleration_discontinuity"
JOINT_REFLEX = "joint_reflex"
# Rounding of a 1 kHz difference quotient: a command exactly at a limit is not a violation.
TOLERANCE = 1.0 + 1e-6


@dataclass
class _Trajectory:
    start: float  # robot time the message's times count from
    times: np.ndarray  # (N+1,) from the start, the first when it was received (the setpoint it joins from)
    positions: np.ndarray  # (N+1, 7)
    velocities: np.ndarray | None
    accelerations: np.ndarray | None


@dataclass
class ArmStandIn:
    robot: RobotModel
    q: np.ndarray
    dq: np.ndarray = field(default_factory=lambda: np.zeros(7))
    ddq: np.ndarray = field(default_factory=lambda: np.zeros(7))
    time: float = 0.0
    error: str = ""  # the Errors field of the reflex, "" when none
    error_detail: str = ""
    trajectory: _Trajectory | None = None
    commands: int = 0

    def __post_init__(self) -> None:
        self.q = np.asarray(self.q, float).copy()

    @property
    def robot_mode(self) -> int:
        if self.error:
            return ROBOT_MODE_REFLEX
        return ROBOT_MODE_MOVE

    def command(self, times, positions, velocities=None, accelerations=None, start: float | None = None) -> None:
        """A trajectory message: points at times after start (robot time: the message's
        stamp; None, a zero stamp: now, on receipt), positions (N x 7), and velocities and
        accelerations where the message carries them. Points already past are dropped; the
        rest are joined from the current setpoint. Ignored in reflex (no controller runs)."""
        if self.error:
            return
        start = self.time if start is None else float(start)
        times = np.asarray(times, float)
        ahead = start + times > self.time + 1e-9
        if not ahead.any():
            return
        times = np.concatenate([[self.time - start], times[ahead]])
        positions = np.vstack([self.q, np.asarray(positions, float)[ahead]])
        v = a = None
        if velocities is not None:
            v = np.vstack([self.dq, np.asarray(velocities, float)[ahead]])
            if accelerations is not None:
                a = np.vstack([self.ddq, np.asarray(accelerations, float)[ahead]])
        self.trajectory = _Trajectory(start, times, positions, v, a)
        self.commands += 1

    def reflex(self, error: str, detail: str) -> None:
        """The arm stops where it stands and keeps the error until it is recovered."""
        if not self.error:
            self.error, self.error_detail = error, detail
        self.dq, self.ddq = np.zeros(7), np.zeros(7)
        self.trajectory = None

    def recover(self) -> None:
        """franka_ros2's error recovery: the error is cleared, the arm holds where it is."""
        self.error, self.error_detail = "", ""
        self.trajectory = None

    def advance(self, until: float) -> None:
        """Run the 1 kHz cycles up to robot time until."""
        while self.time + CYCLE_S <= until + 1e-12:
            self.time += CYCLE_S
            if self.error:
                continue
            q, dq, ddq = self._setpoint(self.time)
            self._check(q, dq, ddq)
            if not self.error:
                self.q, self.dq, self.ddq = q, dq, ddq

    def _setpoint(self, now: float):
        traj = self.trajectory
        if traj is None:
            return self.q, np.zeros(7), np.zeros(7)
        t = now - traj.start
        if t >= traj.times[-1]:
            return traj.positions[-1], np.zeros(7), np.zeros(7)  # the last point held
        i = int(np.searchsorted(traj.times, t, side="right")) - 1
        t0, t1 = traj.times[i], traj.times[i + 1]
        p0, p1 = traj.positions[i], traj.positions[i + 1]
        if traj.velocities is None:  # positions only: linear
            dq = (p1 - p0) / (t1 - t0)
            return p0 + dq * (t - t0), dq, np.zeros(7)
        v0, v1 = traj.velocities[i], traj.velocities[i + 1]
        if traj.accelerations is None:  # cubic: a quintic with the accelerations a cubic has
            T = t1 - t0
            a0 = (6 * (p1 - p0) - (4 * v0 + 2 * v1) * T) / T ** 2
            a1 = (-6 * (p1 - p0) + (2 * v0 + 4 * v1) * T) / T ** 2
        else:
            a0, a1 = traj.accelerations[i], traj.accelerations[i + 1]
        q, dq, ddq, _ = quintic(p0, v0, a0, p1, v1, a1, t1 - t0, np.array([t - t0]))
        return q[0], dq[0], ddq[0]

    def _check(self, q, dq, ddq) -> None:
        robot = self.robot
        lo, hi = np.asarray(robot.lower), np.asarray(robot.upper)
        if ((q < lo) | (q > hi)).any():
            j = int(np.argmax((q < lo) | (q > hi)))
            return self.reflex(POSITION_LIMITS, f"joint {j + 1} at {q[j]:+.4f} rad outside [{lo[j]}, {hi[j]}]")
        down, up = robot.velocity_bounds(q)
        over = (dq < down * TOLERANCE - 1e-9) | (dq > up * TOLERANCE + 1e-9)
        if over.any():
            j = int(np.argmax(over))
            return self.reflex(VELOCITY_LIMITS, f"joint {j + 1} at {dq[j]:+.3f} rad/s outside "
                                                f"[{down[j]:.3f}, {up[j]:.3f}]")
        jump = np.abs(dq - self.dq) / CYCLE_S
        amax = np.asarray(robot.max_acceleration) * TOLERANCE
        if (jump > amax).any():
            j = int(np.argmax(jump > amax))
            return self.reflex(VELOCITY_DISCONTINUITY, f"joint {j + 1} velocity jumped by {dq[j] - self.dq[j]:+.4f} "
                                                       f"rad/s in one cycle ({jump[j]:.1f} rad/s^2)")
        jerk = np.abs(ddq - self.ddq) / CYCLE_S
        jmax = np.asarray(robot.max_jerk) * TOLERANCE
        if (jerk > jmax).any():
            j = int(np.argmax(jerk > jmax))
            return self.reflex(ACCELERATION_DISCONTINUITY, f"joint {j + 1} acceleration jumped by "
                                                           f"{ddq[j] - self.ddq[j]:+.3f} rad/s^2 in one cycle "
                                                           f"({jerk[j]:.0f} rad/s^3)")
        return None


@dataclass
class FaultWatch:
    """Hardware faults seen from the evaluation PC. `joint_state_timeout_s`: the longest
    gap in the joint states (franka_ros2 publishes them at about 30 Hz)."""
    joint_state_timeout_s: float = 0.25
    last_joint_state: float | None = None
    robot_mode: int | None = None
    errors: tuple[str, ...] = ()
    # The trajectory controller's state in controller_manager's last listing ("active",
    # "inactive", ..., "not loaded"); None until a listing came.
    controller: str = ""
    controller_state: str | None = None

    def joint_state(self, now: float) -> None:
        self.last_joint_state = now

    def robot_state(self, mode: int, errors: tuple[str, ...]) -> None:
        self.robot_mode, self.errors = int(mode), tuple(errors)

    def controllers(self, controller: str, states: dict[str, str]) -> None:
        """controller_manager's listing (name -> state) and the controller that must be active."""
        self.controller = controller
        self.controller_state = states.get(controller, "not loaded")

    def fault(self, now: float, watch_robot_state: bool = True) -> str:
        """The cause of the first fault found, "" when none. Before the first joint state
        (the arm not up yet) nothing is judged."""
        if self.last_joint_state is not None and now - self.last_joint_state > self.joint_state_timeout_s:
            return f"joint states stale: none for {now - self.last_joint_state:.2f} s (limit {self.joint_state_timeout_s} s)"
        robot_state = watch_robot_state and self.robot_mode is not None
        if robot_state and self.errors:
            return f"robot error: {', '.join(self.errors)} (robot mode {ROBOT_MODE_NAMES.get(self.robot_mode, self.robot_mode)})"
        # Before the mode: with no controller running the robot reports idle, which says less.
        if self.controller_state not in (None, "active"):
            return f"controller {self.controller} {self.controller_state}: franka_ros2 does not follow the rows"
        if robot_state and self.robot_mode != ROBOT_MODE_MOVE:
            return f"robot mode {ROBOT_MODE_NAMES.get(self.robot_mode, self.robot_mode)}: no controller is moving the arm"
        return ""


@dataclass(frozen=True)
class Gated:
    """What the arm bridge does with one message of rows: `command` the message to send
    (None: nothing goes out); `late` the tested system's lateness that stopped the arm (said
    once per stop); `broken` a message refused for another reason (rows on time whose path
    leaves the limits); `resumed` rows followed again after a stop."""
    command: TrajectoryCommand | None
    late: str = ""
    broken: str = ""
    resumed: bool = False


class CommandGate:
    """Rows to trajectory messages the arm never answers with a reflex (see the module
    docstring). `holding`: late rows stopped the stream; the arm comes to rest on the last
    message's tail and stays there. Rows that go on from the refused ones (the next stamps
    of the late schedule) are refused too while they are still late; any other row, or one
    of that schedule once the system has caught up, is tried from where the arm is
    commanded, and the first whose message passes the check resumes the stream."""

    def __init__(self, robot: RobotModel, interval_s: float, latency_s: float, delivery_s: float = DELIVERY_S):
        self.robot = robot
        self.stream = RowStream(robot.arm_joints, interval_s, robot.max_acceleration, latency_s, delivery_s)
        self.holding = False
        self.late_next: float | None = None  # while holding: the stamp the refused rows' next one carries

    def rows(self, now: float, stamp: float, rows, measured) -> Gated:
        """The message for rows received at `now` (stamped `stamp`, the same clock) with the
        arm measured at `measured`."""
        rows = np.atleast_2d(np.asarray(rows, float))
        T = self.stream.interval
        if self.holding and self.late_next is not None and abs(stamp - self.late_next) < 0.25 * T \
                and self.stream.offset is not None and self.stream.late(now, stamp):
            self.late_next = stamp + len(rows) * T  # the late rows go on, still late: they stay refused
            return Gated(None)
        before = copy.deepcopy(self.stream)
        command = self.stream.send(now, stamp, rows, measured)
        problems = motion_problems(self.robot, message_motion(self.stream.sent_from, command))
        if not problems:
            resumed, self.holding, self.late_next = self.holding, False, None
            return Gated(command, resumed=resumed)
        new_path = self.stream.starts != before.starts
        self.stream = before  # not sent: the arm goes on along the last message, its tail to rest
        if not new_path and before.starts <= 1:
            # Rows on time since the stream began, yet the arm cannot follow them.
            return Gated(None, broken=f"command stream broken: {problems[0]}; the arm brakes to rest")
        self.late_next = stamp + len(rows) * T
        if self.holding:
            return Gated(None)
        self.holding = True
        if not new_path:  # on a path that a late row or a gap began: the rows assume a motion the arm left
            which = "rows since a row came late or after a gap cannot be followed from where that left the arm"
        elif before.starts:
            which = "a row came late or after a gap and the arm cannot follow it"
        else:
            which = "the stream's first row cannot be followed from where the arm stands"
        return Gated(None, late=f"{which} within the {self.robot.name}'s limits ({problems[0]}): the arm "
                                f"stops and holds until rows come on time")
