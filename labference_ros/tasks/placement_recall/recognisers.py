"""Measurements in the rack's frame, the seating predicate and the behaviour
recognisers of placement recall (paper 5.3, 8.3). Recognisers are looser than
the seating predicate, so a choice is identified early and success is judged
strictly and separately.

  seated      a tube upright in a hole (tilt <= 10 deg), its bottom >= 60 % of the
              hole's depth below the top face, inside the guides' clearance,
              released, supported by the rack and still; confirmed after 0.5 s
  grasp       bilateral finger contact while the gripper closes, held 0.1 s
  release     no robot contact on a grasped tube for 0.1 s (both: tasks/grasping.py)
  placement   a held tube's bottom descending in one hole's column (its opening grown
              by a margin, at most max_height above the top face), sustained
  retrieval   the grip point descending in one hole's column before the fingers touch
              any tube (the first deliberate pre-contact approach), sustained

Everything is judged in the rack's measured frame, so local holes keep their
labels when the rack moves. Pure: measurements in, verdicts and recognitions out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labference_ros.core.geometry import body_axis, clip_unit
from labference_ros.core.measurements import LEFT_FINGER, RIGHT_FINGER, ObjectMeasurement, WorldMeasurement
from labference_ros.tasks.grasping import ROBOT_CONTACTS, GraspTracker
from labference_ros.tasks.placement_recall.contract import RACK_OBJECT, TCP_OBJECT, PlacementContract
from labference_ros.tasks.placement_recall.rack import RackPose, hole_under, to_local

SEAT_CHECKS = ("in_hole", "upright", "deep", "centred", "released", "supported", "still")
# The grip point's approach column reaches higher than a held tube's bottom: the hand
# comes down onto a tube that stands 50 mm out of the rack.
RETRIEVAL_EXTRA_HEIGHT_M = 0.06


def rack_pose(m: WorldMeasurement, fallback: RackPose) -> RackPose:
    """The rack's measured pose (its top face's centre and yaw), or the fallback."""
    rack = m.objects.get(RACK_OBJECT)
    if rack is None:
        return fallback
    w, x, y, z = rack.orientation
    yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return RackPose(tuple(float(c) for c in rack.position), yaw)


def tube_bottom(obj: ObjectMeasurement, length_m: float) -> tuple[np.ndarray, float]:
    """(the tube's bottom point, its tilt from vertical in degrees); body +z points to the cap."""
    up = np.asarray(body_axis(obj.orientation), dtype=float)
    up /= np.linalg.norm(up)
    tilt = math.degrees(math.acos(clip_unit(up[2])))
    return np.asarray(obj.position, dtype=float) - up * (length_m / 2), tilt


@dataclass(frozen=True)
class SeatCheck:
    hole: str | None  # the hole whose opening the tube's bottom is under (None: none)
    tilt_deg: float = 0.0
    depth_fraction: float = 0.0
    passed: tuple[str, ...] = ()

    @property
    def seated(self) -> bool:
        return self.hole is not None and set(SEAT_CHECKS) <= set(self.passed)

    @property
    def failures(self) -> tuple[str, ...]:
        return tuple(c for c in SEAT_CHECKS if c not in self.passed)


def seat_check(obj: ObjectMeasurement, pose: RackPose, contract: PlacementContract) -> SeatCheck:
    """The seating predicate at one instant, in the rack's frame."""
    geometry, th = contract.rack, contract.seating
    bottom, tilt = tube_bottom(obj, contract.tube.length_m)
    hole = hole_under(bottom, geometry, pose)
    if not hole:
        return SeatCheck(None, tilt)
    local = to_local(bottom, pose)
    centre = geometry.local_hole(hole)
    fraction = -float(local[2]) / geometry.depth_m
    # The guides' clearance at this tilt (paper 8.1), and the contact's penetration.
    tilted = contract.tube.radius_m * math.cos(math.radians(min(tilt, 90.0)))
    clearance = geometry.hole_half_m - tilted + th.contact_penetration_m
    contacts = set(obj.contacts)
    passed = ["in_hole"]
    if tilt <= th.max_tilt_deg:
        passed.append("upright")
    if fraction >= th.min_depth_fraction:
        passed.append("deep")
    if max(abs(local[0] - centre[0]), abs(local[1] - centre[1])) <= clearance:
        passed.append("centred")
    if not contacts & set(ROBOT_CONTACTS):
        passed.append("released")
    if RACK_OBJECT in contacts:
        passed.append("supported")
    if obj.linear_speed <= th.max_linear_mps and obj.angular_speed <= th.max_angular_rps:
        passed.append("still")
    return SeatCheck(hole, tilt, fraction, tuple(passed))


def seated_holes(measurement, pose, contract, tubes) -> dict[str, str]:
    """tube -> hole for each of `tubes` standing in a hole now (inside it and deep enough:
    the seating predicate's shape, without its dwell)."""
    seated = {}
    for tube in tubes:
        o = measurement.objects.get(tube)
        check = seat_check(o, pose, contract) if o is not None else None
        if check is not None and check.hole and {"in_hole", "deep"} <= set(check.passed):
            seated[tube] = check.hole
    return seated


class SeatTracker:
    """One tube's seating over time: confirmed once the predicate has held in the same
    hole for the contract's dwell (0.5 s), continuously; any break restarts it."""

    def __init__(self, contract: PlacementContract):
        self.dwell_s = contract.seating.dwell_s
        self.since: float | None = None
        self.hole: str | None = None
        self.confirmed: str | None = None

    def update(self, t: float, check: SeatCheck) -> str | None:
        """The hole confirmed at this instant (once per seating), else None."""
        if not check.seated:
            self.since, self.hole, self.confirmed = None, None, None
            return None
        if check.hole != self.hole or self.since is None:
            self.since, self.hole, self.confirmed = t, check.hole, None
        if self.confirmed is None and t - self.since >= self.dwell_s - 1e-9:
            self.confirmed = check.hole
            return check.hole
        return None


class ColumnApproach:
    """A point descending in one hole's column, sustained for hold_s: the hole, once."""

    def __init__(self, contract: PlacementContract, max_height_m: float):
        self.contract, self.max_height_m = contract, max_height_m
        self._last: tuple[float, float] | None = None  # (t, local z)
        self._hole: str | None = None
        self._since = 0.0

    def reset(self) -> None:
        self._last, self._hole = None, None

    def step(self, t: float, point_world, pose: RackPose) -> str | None:
        th = self.contract.approach
        local = to_local(point_world, pose)
        previous, self._last = self._last, (t, float(local[2]))
        hole = hole_under(point_world, self.contract.rack, pose, margin_m=th.margin_m)
        descending = previous is not None and t > previous[0] and \
            (previous[1] - local[2]) / (t - previous[0]) >= th.min_descent_mps
        if not hole or not 0.0 <= local[2] <= self.max_height_m or not descending:
            self._hole = None
            return None
        if hole != self._hole:
            self._hole, self._since = hole, t
        if t - self._since >= th.hold_s - 1e-9:
            return hole
        return None


class TubeTracker:
    """Grasp and release of one tube, and the holes its bottom descends into while held."""

    def __init__(self, name: str, contract: PlacementContract):
        self.name, self.contract = name, contract
        self.hand = GraspTracker()
        self._approach = ColumnApproach(contract, contract.approach.max_height_m)
        self.approached_this_grasp: set[str] = set()

    @property
    def grasping(self) -> bool:
        return self.hand.grasping

    @property
    def attempt(self) -> int:
        return self.hand.attempt

    def step(self, m: WorldMeasurement, o: ObjectMeasurement, pose: RackPose) -> list[dict]:
        out = []
        change = self.hand.step(m, o)
        if change == "grasp":
            self.approached_this_grasp = set()
            self._approach.reset()
        if change is not None:
            out.append({"category": change, "t": m.t, "object": self.name, "attempt": self.attempt})
        if self.grasping:
            bottom, tilt = tube_bottom(o, self.contract.tube.length_m)
            hole = self._approach.step(m.t, bottom, pose) if tilt <= self.contract.approach.max_open_tilt_deg \
                else self._approach.reset()
            if hole and hole not in self.approached_this_grasp:
                self.approached_this_grasp.add(hole)
                out.append({"category": "placement_attempt", "t": m.t, "object": self.name, "hole": hole,
                            "attempt": self.attempt})
        return out


class RetrievalTracker:
    """The grip point's deliberate approach to a hole before the fingers touch any tube."""

    def __init__(self, contract: PlacementContract):
        self.contract = contract
        self._approach = ColumnApproach(contract, contract.approach.max_height_m + RETRIEVAL_EXTRA_HEIGHT_M)
        self.approached: set[str] = set()
        self.touched = False  # a finger has touched a tube: later approaches are no pre-contact choice

    def step(self, m: WorldMeasurement, pose: RackPose) -> list[dict]:
        tcp = m.objects.get(TCP_OBJECT)
        self.touched = self.touched or any({LEFT_FINGER, RIGHT_FINGER} & set(o.contacts)
                                           for o in m.objects.values() if o.kind == "tube")
        if tcp is None or self.touched:
            self._approach.reset()
            return []
        hole = self._approach.step(m.t, tcp.position, pose)
        if hole and hole not in self.approached:
            self.approached.add(hole)
            return [{"category": "retrieval_attempt", "t": m.t, "object": "", "hole": hole}]
        return []
