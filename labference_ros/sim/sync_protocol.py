"""lab_sim's sync protocol, free of ROS (nodes/lab_sim.py moves it over ROS).

Sync mode lets a caller keep one advance ahead: an advance asked while another
runs waits for it (a third is refused; with LABFERENCE_EXECUTOR=single the advance
service's callback group keeps it in the middleware until the first ends), and a
command stamped later than the current sim time waits until sim time reaches its
stamp, so it acts at its boundary exactly as if it had arrived there. The policy
bridge so sends several rows, one command each, for one advance that names their
boundaries, and the next advance's rows while one runs. An advance whose
command_stamp is ahead of sim time when its turn comes (asked before a reset, or
after an advance that failed) is refused. An advance's answer carries the last
measurement published (joint state and world state), so the caller needs no
subscription to read the state at its boundaries.

Here: the held commands, the boundaries whose commands arrived, what an advance
waits for, the balance readings each camera frame is owed, and the measurement grid.
Stamps are builtin_interfaces/Time-like (sec, nanosec) or nanoseconds."""
from __future__ import annotations

import math
from collections import deque

from labference_ros.msgconv import stamp_parts, stamp_to_s

# The balance display shows the newest reading stamped at least DISPLAY_LAG_S before
# a frame (a display's latency: two measurement periods at the default rate). The
# balance node answers every wrench with a reading of the wrench's stamp; in sync mode
# lab_sim waits for the reading of the last wrench so stamped before it renders, so
# that the same seeds give the same frames in every run, whenever the balance node's
# answer comes. In realtime mode a frame shows the newest such reading that has arrived.
DISPLAY_LAG_S = 0.02
# A command stamped within this of the current sim time is for now (rounding of stamps).
STAMP_EPS_S = 1e-9
STAMP_TOLERANCE_NS = 1
# Boundaries whose commands lab_sim remembers, per kind: at least the rows of the advance
# that runs and of the one asked ahead (the policy bridge's rows_per_advance, twice).
COMMANDS_KEPT = 128
MAX_ADVANCE_S = 10.0


def stamp_ns(stamp) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def time_ns(t: float) -> int:
    """Sim time as a message stamp's nanoseconds (msgconv.s_to_stamp's rounding)."""
    sec, nanosec = stamp_parts(t)
    return sec * 1_000_000_000 + nanosec


class CommandedBoundaries:
    """The boundaries (stamps, ns) whose commands of one kind arrived in this timeline: the
    newest ``kept``; one is found within the rounding of sim-time sums (a nanosecond)."""

    def __init__(self, kept: int):
        self.kept = kept
        self.order: deque[int] = deque()
        self.stamps: set[int] = set()

    def add(self, stamp_ns: int) -> None:
        if stamp_ns in self.stamps:
            return
        self.order.append(stamp_ns)
        self.stamps.add(stamp_ns)
        if len(self.order) > self.kept:
            self.stamps.discard(self.order.popleft())

    def __contains__(self, stamp_ns: int) -> bool:
        return any(stamp_ns + d in self.stamps for d in range(-STAMP_TOLERANCE_NS, STAMP_TOLERANCE_NS + 1))

    def clear(self) -> None:
        self.order.clear()
        self.stamps.clear()


class HeldCommands:
    """The arm and gripper commands of one timeline. Sync mode holds a command stamped
    after the current sim time until sim time reaches its stamp (realtime applies each on
    arrival); ``apply_arm``/``apply_gripper`` act on one. Each kind keeps the boundaries
    commanded, which an advance that names them waits for."""

    def __init__(self, sync: bool, apply_arm, apply_gripper, kept: int = COMMANDS_KEPT):
        self.sync = sync
        self.arm: deque = deque()  # held, in stamp order
        self.gripper: deque = deque()
        self.arm_stamps = CommandedBoundaries(kept)
        self.gripper_stamps = CommandedBoundaries(kept)
        self.apply_arm, self.apply_gripper = apply_arm, apply_gripper

    def __bool__(self) -> bool:
        """Whether a command for a later boundary is held."""
        return bool(self.arm or self.gripper)

    def is_ahead(self, stamp, now_s: float) -> bool:
        """A sync-mode stamp (builtin_interfaces/Time) of a boundary sim time has not reached yet."""
        return self.sync and stamp_to_s(stamp) > now_s + STAMP_EPS_S

    def take_arm(self, msg, now_s: float) -> None:
        self._take(msg, self.arm, self.arm_stamps, self.apply_arm, now_s)

    def take_gripper(self, msg, now_s: float) -> None:
        self._take(msg, self.gripper, self.gripper_stamps, self.apply_gripper, now_s)

    def _take(self, msg, held: deque, stamps: CommandedBoundaries, apply, now_s: float) -> None:
        """One arm or gripper command: applied now, or held until sim time reaches its stamp.
        Either way it replaces the held commands of its kind stamped at or after its own (JTC
        replace semantics: what was planned from its boundary on), but held ones whose
        boundary is reached are applied first. Its boundary counts as commanded even when a
        later command replaces it (a stop replacing the rows sent ahead): the advance that
        waits for that boundary's command goes on."""
        self.apply_due(now_s)
        stamp = stamp_ns(msg.header.stamp)
        while held and stamp_ns(held[-1].header.stamp) >= stamp:
            held.pop()
        if self.is_ahead(msg.header.stamp, now_s):
            held.append(msg)
        else:
            apply(msg)
        stamps.add(stamp)

    def apply_due(self, now_s: float) -> None:
        """The commands held for a boundary, once sim time has reached it."""
        now = now_s + STAMP_EPS_S
        while self.arm and stamp_to_s(self.arm[0].header.stamp) <= now:
            self.apply_arm(self.arm.popleft())
        while self.gripper and stamp_to_s(self.gripper[0].header.stamp) <= now:
            self.apply_gripper(self.gripper.popleft())

    def arrived(self, arm_wanted: list[int], gripper_wanted: list[int]) -> bool:
        """Whether the commands of every boundary named (ns) are here."""
        return all(s in self.arm_stamps for s in arm_wanted) and all(s in self.gripper_stamps
                                                                     for s in gripper_wanted)

    def clear(self) -> None:
        """A new timeline (reset or restore): commands held for the old one are dropped."""
        self.arm.clear()
        self.gripper.clear()
        self.arm_stamps.clear()
        self.gripper_stamps.clear()


def advance_wants(request, sim_time_s: float) -> tuple[list[int], list[int], str]:
    """The boundaries (ns) whose arm and gripper commands an Advance request waits for,
    and why it is refused ('' when it is not): a command_stamp ahead of sim time, a bad
    duration, or a command stamp outside the interval it runs."""
    if stamp_to_s(request.command_stamp) > sim_time_s + STAMP_EPS_S:
        # Stale (asked before a reset or restore, or after an advance before it failed): an
        # advance starts at the boundary it names.
        return [], [], (f"command_stamp {stamp_to_s(request.command_stamp):.3f} s is ahead of "
                        f"sim time {sim_time_s:.3f} s")
    if not (math.isfinite(request.duration_s) and 0.0 <= request.duration_s <= MAX_ADVANCE_S):
        return [], [], f"bad duration {request.duration_s}"
    want = stamp_ns(request.command_stamp)
    arm = [want] * request.require_arm_command + [stamp_ns(s) for s in request.arm_command_stamps]
    gripper = [want] * request.require_gripper_command + [stamp_ns(s) for s in request.gripper_command_stamps]
    end = want + time_ns(request.duration_s)
    outside = [s for s in arm + gripper if not want <= s < max(end, want + 1)]
    if outside:
        return [], [], (f"a command stamp ({outside[0] * 1e-9:.3f} s) lies outside the interval "
                        f"[{want * 1e-9:.3f}, {end * 1e-9:.3f}) s")
    return arm, gripper, ""


class DisplayReadings:
    """The display's inputs since the last reset or restore (one timeline of sim time),
    stamps in nanoseconds: the wrenches published, each owed a reading, and the readings
    received, stamp -> (shown grams, stable)."""

    def __init__(self):
        self.start_ns = 0
        self.wrench_stamps: deque[int] = deque(maxlen=1000)
        # Wall time (ns) each wrench of this timeline went out, by stamp: a reading of that
        # stamp published before then answers an earlier timeline's wrench (after a restore).
        self.wrench_sent_ns: dict[int, int] = {}
        self.readings: dict[int, tuple[float, bool]] = {}
        self.waits = True  # False after a wait timed out in this timeline

    def restart(self, start_ns: int) -> None:
        """A reset or restore: sim time starts again at start_ns, the readings owed with it."""
        self.start_ns = start_ns
        self.wrench_stamps.clear()
        self.wrench_sent_ns.clear()
        self.readings.clear()
        self.waits = True

    def sending_wrench(self, stamp: int, wall_ns: int) -> None:
        """A wrench stamped ``stamp`` goes out now (wall ns): before, the reading comes after."""
        self.wrench_sent_ns[stamp] = wall_ns
        if len(self.wrench_sent_ns) > 1000:
            del self.wrench_sent_ns[next(iter(self.wrench_sent_ns))]

    def wrench_sent(self, stamp: int) -> None:
        self.wrench_stamps.append(stamp)  # each wrench published is owed a reading

    def note(self, msg, published_ns: int, sim_now_ns: int) -> None:
        """One BalanceReading, published (wall ns, 0: unknown) by the balance, with sim time at sim_now_ns."""
        stamp = stamp_ns(msg.header.stamp)
        # Stamped outside this timeline: in flight from before a reset or restore.
        if not self.start_ns <= stamp <= sim_now_ns:
            return
        # Taken at a frame, not on arrival: one in flight at a restore can carry a stamp
        # this timeline has reached again since; it was published before this one's wrench.
        sent = self.wrench_sent_ns.get(stamp)
        if published_ns and sent is not None and published_ns < sent:
            return
        shown = msg.displayed_g if msg.valid and not msg.overload else float("nan")
        self.readings[stamp] = (shown, msg.stable and msg.valid)
        if len(self.readings) > 1000:
            del self.readings[next(iter(self.readings))]

    def for_frame(self, t: float) -> tuple[tuple[float, bool] | None, int | None]:
        """For a frame at sim time t: the newest reading stamped at least DISPLAY_LAG_S
        before it (None: none yet), and the stamp (ns) of the reading the frame is owed
        while it has not arrived."""
        due = time_ns(t - DISPLAY_LAG_S) + 1000  # 1 us: rounding of sim time sums
        owed = next((stamp for stamp in reversed(self.wrench_stamps) if stamp <= due), None)
        shown = next((stamp for stamp in reversed(self.readings) if stamp <= due), None)
        return (None if shown is None else self.readings[shown],
                None if owed is None or owed in self.readings else owed)


class MeasurementGrid:
    """When measurements and camera frames are due: each on its own grid of periods from
    the reset (or the restored sim time), every camera tick with its measurement."""

    def __init__(self, measure_period: float, camera_period: float):
        self.measure_period, self.camera_period = measure_period, camera_period
        self.next_measure = self.next_camera = 0.0

    def restart(self, t: float) -> None:
        self.next_measure = self.next_camera = t

    def due(self, t: float) -> tuple[bool, bool]:
        """(a measurement is due, a camera frame is due) at sim time t; moves past t."""
        camera_due = t + 1e-9 >= self.next_camera
        # Every camera tick has its measurement, and the measurements keep their own period
        # from the reset whatever the camera rate, so that every control boundary on it is
        # measured (at the default rates the two coincide anyway).
        measure_due = camera_due or t + 1e-9 >= self.next_measure
        while t + 1e-9 >= self.next_measure:
            self.next_measure += self.measure_period
        # Frames keep their grid too (k / camera_rate from the reset): a frame due between two
        # physics steps is rendered at the next, and a policy's frame of the last tick
        # (floor(t * camera_rate) / camera_rate) is found at every boundary.
        while camera_due and t + 1e-9 >= self.next_camera:
            self.next_camera += self.camera_period
        return measure_due, camera_due
