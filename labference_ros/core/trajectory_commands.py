"""Trajectory messages a Franka under franka_ros2 accepts, built from the rows
the policy bridge sends one hold interval apart. Pure (numpy only).

franka_ros2's joint_trajectory_controller interpolates between the points of a
trajectory message at the controller's rate (1 kHz): linearly between points
that carry positions alone (a velocity step at every point, which trips the
arm's discontinuity reflexes), with a quintic spline between points that carry
positions, velocities and accelerations. Each row therefore goes out with the
velocity and acceleration the rows before it imply (second-order backward
differences: exact while the rows follow a quadratic path, so a smooth motion
meets every point with the velocity and acceleration it already has), followed
by a tail that brings the arm to rest at half its acceleration limits. The next
row's message replaces the tail; a stream that stops (a pause, a dead policy, a
lost network) leaves the arm decelerating smoothly instead of stopping dead.

`RowStream` puts the rows on one timeline: each is reached a fixed latency after
its stream began, by the rows' own stamps, so rows that arrive early or late (up to
the latency less one interval and a delivery allowance) describe the same path, and
every message carries the points of that path not yet reached. The node stamps each
message in the robot PC's clock (its
offset estimated from the robot's joint-state stamps), so the controller aligns
successive messages exactly, whatever the two PCs' clocks say and however the
network delays them.

`executed_motion` samples, at the controller's rate, the motion the arm is
commanded while such messages follow each other one interval apart; the safety
envelope checks it (positions, velocities, accelerations and jerk between rows).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CONTROLLER_RATE_HZ = 1000.0  # franka_ros2's controller_manager update_rate
REACHED_S = 0.002  # a point nearer than this is as good as reached: it goes in no message
LATENCY_S = 0.06  # how long after its stream's first row each row is reached
DELIVERY_S = 0.005  # how long a message may take to the controller (a LAN, this node's scheduling)
ROW_INTERVAL_S = 0.02  # the policy bridge's hold interval: one row each


def timing_problem(interval_s: float, latency_s: float, delivery_s: float) -> str:
    """Why a row timeline with these values cannot work ("" when it can): the latency must
    leave room for one interval and the delivery allowance, and the allowance be at least
    what counts as reached."""
    if not delivery_s >= REACHED_S:
        return f"the delivery allowance {delivery_s} s must be at least {REACHED_S} s"
    if not latency_s - interval_s - delivery_s > 0:
        return (f"the command latency {latency_s} s must exceed the row interval {interval_s} s plus the "
                f"delivery allowance {delivery_s} s")
    return ""


@dataclass(frozen=True)
class StreamState:
    """The last two rows sent and the velocity and acceleration the arm's setpoint
    had at the last one (a new stream starts at rest on the measured position)."""
    previous: np.ndarray  # (7,) the row before the last
    last: np.ndarray  # (7,) the last row sent
    velocity: np.ndarray
    acceleration: np.ndarray

    @classmethod
    def at_rest(cls, position) -> "StreamState":
        q = np.asarray(position, float)[:7].copy()
        return cls(q, q, np.zeros(7), np.zeros(7))


@dataclass(frozen=True)
class TrajectoryCommand:
    """One trajectory message: times after receipt, and positions, velocities and
    accelerations (N x 7) at each point."""
    joint_names: tuple[str, ...]
    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray


def next_state(state: StreamState, row, interval_s: float) -> StreamState:
    """The stream after sending row: its velocity and acceleration from the rows
    before it (second-order backward differences, exact on a quadratic path)."""
    row = np.asarray(row, float)[:7]
    step = row - state.last
    acceleration = (step - (state.last - state.previous)) / interval_s ** 2
    if not np.any(state.last != state.previous) and not np.any(state.velocity):
        acceleration = 2.0 * step / interval_s ** 2  # from rest: the row is reached accelerating uniformly
    velocity = step / interval_s + acceleration * interval_s / 2.0
    return StreamState(state.last, row, velocity, acceleration)


def stopping_tail(position, velocity, interval_s: float, max_acceleration, fraction: float = 0.5
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points one interval apart that bring a setpoint moving at velocity to rest:
    (positions, velocities, accelerations), each (M x 7), M >= 1, the last at rest.
    The speed falls along a smoothstep, so the deceleration rises from zero and
    returns to it (no acceleration step at either end); its peak, 1.5 v / duration,
    is at most fraction of each joint's limit."""
    position = np.asarray(position, float)
    velocity = np.asarray(velocity, float)
    if not np.any(velocity):
        return position[None, :], np.zeros((1, len(position))), np.zeros((1, len(position)))
    duration = float(np.max(1.5 * np.abs(velocity) / (np.asarray(max_acceleration, float) * fraction)))
    steps = max(2, int(np.ceil(duration / interval_s)))
    duration = steps * interval_s
    x = np.arange(1, steps + 1)[:, None] / steps
    positions = position + velocity * duration * (x - x ** 3 + x ** 4 / 2)
    velocities = velocity * (1 - 3 * x ** 2 + 2 * x ** 3)
    accelerations = velocity * (-6 * x + 6 * x ** 2) / duration
    return positions, velocities, accelerations


def row_command(state: StreamState, rows, interval_s: float, joint_names, max_acceleration,
                ) -> tuple[TrajectoryCommand, StreamState]:
    """The message that sends rows (one row (7,) or several (L x 7), one interval apart,
    the first reached one interval after receipt) and then brings the arm to rest, and
    the stream after its last row."""
    rows = np.atleast_2d(np.asarray(rows, float))[:, :7]
    positions, velocities, accelerations = [], [], []
    after = state
    for row in rows:
        after = next_state(after, row, interval_s)
        positions.append(after.last)
        velocities.append(after.velocity)
        accelerations.append(after.acceleration)
    tail = stopping_tail(after.last, after.velocity, interval_s, max_acceleration)
    if np.any(after.velocity):
        positions += list(tail[0])
        velocities += list(tail[1])
        accelerations += list(tail[2])
    else:
        accelerations[-1] = np.zeros(7)  # a row reached at rest ends the message at rest
    times = np.arange(1, len(positions) + 1) * interval_s
    return TrajectoryCommand(tuple(joint_names), times, np.array(positions), np.array(velocities),
                             np.array(accelerations)), after


def state_during(state: StreamState, command: TrajectoryCommand, elapsed_s: float,
                 interval_s: float | None = None) -> StreamState:
    """The stream's state elapsed_s after command was sent from state: the setpoint's
    position, velocity and acceleration then (at rest after the message's end), as a
    stream of rows interval_s apart (default: the message's first time) carries it."""
    if elapsed_s >= command.times[-1]:
        return StreamState.at_rest(command.positions[-1])
    times = np.concatenate([[0.0], command.times])
    points = [(state.last, state.velocity, state.acceleration)] + list(
        zip(command.positions, command.velocities, command.accelerations))
    i = max(0, int(np.searchsorted(times, elapsed_s, side="right")) - 1)
    q, dq, ddq, _ = quintic(*points[i], *points[i + 1], times[i + 1] - times[i], np.array([elapsed_s - times[i]]))
    q, dq, ddq = q[0], dq[0], ddq[0]
    interval = command.times[0] if interval_s is None else interval_s
    return StreamState(q - dq * interval + ddq * interval ** 2 / 2, q, dq, ddq)


def quintic(p0, v0, a0, p1, v1, a1, duration: float, t: np.ndarray):
    """Position, velocity, acceleration and jerk at times t (K,) of the quintic that joins
    two points' positions, velocities and accelerations (each (7,)) over duration:
    (K x 7) arrays, as the trajectory controller interpolates."""
    T = duration
    d = p1 - p0
    c0, c1, c2 = p0, v0, a0 / 2.0
    c3 = (20 * d - (8 * v1 + 12 * v0) * T - (3 * a0 - a1) * T ** 2) / (2 * T ** 3)
    c4 = (-30 * d + (14 * v1 + 16 * v0) * T + (3 * a0 - 2 * a1) * T ** 2) / (2 * T ** 4)
    c5 = (12 * d - 6 * (v1 + v0) * T - (a0 - a1) * T ** 2) / (2 * T ** 5)
    t = np.asarray(t, float)[:, None]
    q = c0 + c1 * t + c2 * t ** 2 + c3 * t ** 3 + c4 * t ** 4 + c5 * t ** 5
    qd = c1 + 2 * c2 * t + 3 * c3 * t ** 2 + 4 * c4 * t ** 3 + 5 * c5 * t ** 4
    qdd = 2 * c2 + 6 * c3 * t + 12 * c4 * t ** 2 + 20 * c5 * t ** 3
    qddd = 6 * c3 + 24 * c4 * t + 60 * c5 * t ** 2
    return q, qd, qdd, qddd


@dataclass(frozen=True)
class Motion:
    """The commanded motion sampled at the controller's rate: times (K,), and
    positions, velocities, accelerations and jerks (K x 7); row[i] is the row
    whose interval sample i lies in."""
    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    jerks: np.ndarray
    row: np.ndarray


def executed_motion(state: StreamState, rows, interval_s: float, rate_hz: float = CONTROLLER_RATE_HZ) -> Motion:
    """What the controller commands while rows are sent one interval apart from state:
    each row's message replaces the previous one's tail, so the motion is the chain of
    quintics from one row's point to the next."""
    rows = np.asarray(rows, float)[:, :7]
    steps = max(1, int(round(interval_s * rate_hz)))
    t = np.arange(1, steps + 1) * (interval_s / steps)
    parts = [[], [], [], [], [], []]
    for i, row in enumerate(rows):
        after = next_state(state, row, interval_s)
        q, qd, qdd, qddd = quintic(state.last, state.velocity, state.acceleration, after.last, after.velocity,
                                   after.acceleration, interval_s, t)
        for part, values in zip(parts, (t + i * interval_s, q, qd, qdd, qddd, np.full(steps, i))):
            part.append(values)
        state = after
    if not len(rows):
        return Motion(*(np.zeros((0, 7)) if k else np.zeros(0) for k in range(5)), np.zeros(0, int))
    return Motion(*(np.concatenate(p) for p in parts))


def message_motion(state: StreamState, command: TrajectoryCommand, rate_hz: float = CONTROLLER_RATE_HZ) -> Motion:
    """The motion one message commands when nothing replaces it (its row, then its tail)."""
    points = [(state.last, state.velocity, state.acceleration)] + list(
        zip(command.positions, command.velocities, command.accelerations))
    times = np.concatenate([[0.0], command.times])
    parts = [[], [], [], [], [], []]
    for i in range(len(points) - 1):
        T = times[i + 1] - times[i]
        steps = max(1, int(round(T * rate_hz)))
        t = np.arange(1, steps + 1) * (T / steps)
        q, qd, qdd, qddd = quintic(*points[i], *points[i + 1], T, t)
        for part, values in zip(parts, (t + times[i], q, qd, qdd, qddd, np.full(steps, i))):
            part.append(values)
    return Motion(*(np.concatenate(p) for p in parts))


class RowStream:
    """The graph's rows as trajectory messages on one timeline, whatever the delivery.

    A row stamped `stamp` (the start of its interval, the graph's clock) is reached at
    `stamp + interval + offset`: the offset is fixed when a stream starts, `latency_s`
    ahead of the first row's receipt, so rows that arrive early or late (up to the
    latency less the interval and `delivery_s`) still land on the same path. Every
    message carries the points of that path not yet reached, times after `now`, and then the tail to rest; where the
    controller starts each message by the robot's clock (the node stamps it in the
    robot PC's time), successive messages describe one motion and its joins are exact.
    A row that is late, or comes after a gap, starts the path again from where the
    commanded motion is then (on the last message, or its tail); a late row on a new
    timeline, reached `latency_s` after its receipt. A row is late when the path's point
    before it would be reached within `delivery_s` of its receipt: the controller then
    takes the message after the arm has left the path for the last message's tail, and
    would join the two over a moment (a discontinuity reflex). So rows tolerate
    latency - interval - delivery of jitter, and messages `delivery_s` on their way (the
    network, this node's scheduling, the clock offset's estimate): on one path every
    message describes the same motion, and a new path departs from the last message's
    motion at least the delivery allowance ahead."""

    def __init__(self, joint_names, interval_s: float, max_acceleration, latency_s: float = LATENCY_S,
                 delivery_s: float = DELIVERY_S):
        self.joint_names = tuple(joint_names)
        self.interval = float(interval_s)
        self.max_acceleration = tuple(max_acceleration)
        self.latency = float(latency_s)
        self.delivery = float(delivery_s)
        problem = timing_problem(self.interval, self.latency, self.delivery)
        if problem:
            raise ValueError(problem)
        self.offset: float | None = None
        self.path: list[tuple[float, StreamState]] = []  # (time reached, state there), the last row last
        self.sent: TrajectoryCommand | None = None
        self.sent_at = 0.0
        self.sent_from: StreamState | None = None  # the commanded state when the last message went out
        self.starts = 0  # paths begun: the first row, and each row late or after a gap
        self.began_at_rest = True  # the commanded motion was at rest when the current path began

    def commanded(self, t: float, measured=None) -> StreamState:
        """The commanded setpoint at time t: on the last message's motion (at rest after it,
        on the measured position before any)."""
        if self.sent is None:
            return StreamState.at_rest(measured)
        return state_during(self.sent_from, self.sent, t - self.sent_at, self.interval)

    def late(self, now: float, stamp: float) -> bool:
        """A row stamped `stamp` received at `now` comes too late for this stream's timeline
        (or no stream has begun): the path's point before it is reached within the delivery
        allowance, so the arm may be off the path when its message arrives."""
        return self.offset is None or stamp + self.offset - now < self.delivery

    def send(self, now: float, stamp: float, rows, measured=None) -> TrajectoryCommand:
        """The message for rows (L x 7, one interval apart, the first stamped `stamp`)
        received at `now` (the same clock)."""
        rows = np.atleast_2d(np.asarray(rows, float))[:, :7]
        T = self.interval
        first = None if self.offset is None else stamp + T + self.offset
        continues = (first is not None and self.path and not self.late(now, stamp)
                     and abs(first - (self.path[-1][0] + T)) < 0.25 * T)
        at_send = self.commanded(now, measured)
        if not continues:
            if self.late(now, stamp):
                self.offset = now + self.latency - (stamp + T)  # a new stream, or a row too late
                first = stamp + T + self.offset
            start = first - T  # at least the delivery allowance ahead
            self.path = [(start, self.commanded(start, measured))]
            self.began_at_rest = all(not (np.any(s.velocity) or np.any(s.acceleration))
                                     for s in (at_send, self.path[0][1]))
            self.starts += 1
        t, state = self.path[-1]
        for row in rows:
            state = next_state(state, row, T)
            t += T
            self.path.append((t, state))
        ahead = [(t, s) for t, s in self.path if t > now + REACHED_S]
        tail_q, tail_v, tail_a = stopping_tail(state.last, state.velocity, T, self.max_acceleration)
        times = [t - now for t, _ in ahead]
        positions = [s.last for _, s in ahead]
        velocities = [s.velocity for _, s in ahead]
        accelerations = [s.acceleration for _, s in ahead]
        if np.any(state.velocity):
            times += list(times[-1] + T * np.arange(1, len(tail_q) + 1))
            positions += list(tail_q)
            velocities += list(tail_v)
            accelerations += list(tail_a)
        else:
            accelerations[-1] = np.zeros(7)
        command = TrajectoryCommand(self.joint_names, np.array(times), np.array(positions), np.array(velocities),
                                    np.array(accelerations))
        self.path = [(t, s) for t, s in self.path if t > now - T] or self.path[-1:]
        self.sent, self.sent_at, self.sent_from = command, now, at_send
        return command
