"""The insertion predicate (paper 8.1): a tube is seated in a slot when its axis
is within 10 degrees of the socket's directed axis, its bottom is at least
60 % of the effective socket depth past the mouth, its bottom's radial offset
from the socket axis is within the physical clearance, and it is released,
supported by the rotor and still; confirmed once all of that has held for
0.5 s without a break. Choosing a slot and seating a tube are separate
measurements: this module only judges the seating.

Pure: measurements in (core.measurements.ObjectMeasurement), verdicts out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labference_ros.core.geometry import body_axis, clip_unit
from labference_ros.core.measurements import LEFT_FINGER, RIGHT_FINGER, ROBOT, ObjectMeasurement
from labference_ros.tasks.centrifuge.contract import CentrifugeContract
from labference_ros.tasks.centrifuge.rotor import SlotFrame

ROTOR = "rotor"  # the contact identity of the rotor and its sockets
ROBOT_CONTACTS = (LEFT_FINGER, RIGHT_FINGER, ROBOT)
CHECKS = ("in_socket", "aligned", "deep", "centred", "released", "supported", "still")


def tube_bottom(obj: ObjectMeasurement, length_m: float) -> tuple[np.ndarray, np.ndarray]:
    """The tube's bottom point and its unit axis pointing from cap to bottom
    (the tube's body +z points to its cap)."""
    up = np.asarray(body_axis(obj.orientation), dtype=float)
    down = -up / np.linalg.norm(up)
    return np.asarray(obj.position, dtype=float) + down * (length_m / 2), down


@dataclass(frozen=True)
class SeatCheck:
    slot: int | None  # the socket the tube's bottom is nearest to (None: near none)
    axial_error_deg: float | None = None
    depth_fraction: float | None = None
    radial_m: float | None = None
    passed: tuple[str, ...] = ()

    @property
    def seated(self) -> bool:
        return self.slot is not None and set(CHECKS) <= set(self.passed)

    @property
    def failures(self) -> tuple[str, ...]:
        return tuple(c for c in CHECKS if c not in self.passed)

    def to_dict(self) -> dict:
        return {"slot": self.slot, "axial_error_deg": self.axial_error_deg, "depth_fraction": self.depth_fraction,
                "radial_m": self.radial_m, "failures": list(self.failures)}


# The vectorised pass over all sockets only narrows them down (its sums may differ in
# the last bit); every number a threshold sees is computed one socket at a time, as
# the records always were. 1 nm is far beyond that rounding, far below any tolerance.
SHORTLIST_MARGIN_M = 1e-9


def socket_offsets(bottom: np.ndarray, frame: SlotFrame) -> tuple[float, float]:
    """(depth past the mouth along the axis, radial distance from the axis line)."""
    v = bottom - frame.mouth
    depth = float(v @ frame.axis)
    return depth, float(np.linalg.norm(v - depth * frame.axis))


# frames list id -> (the list, its axes, its mouths): a referee asks about the same
# sockets at every measurement, so they are stacked into arrays once.
_stacked: dict[int, tuple[list, np.ndarray, np.ndarray]] = {}


def _stacked_frames(frames: list[SlotFrame]) -> tuple[np.ndarray, np.ndarray]:
    known = _stacked.get(id(frames))
    if known is None or known[0] is not frames or len(known[1]) != len(frames):
        if len(_stacked) >= 64:
            _stacked.clear()
        known = _stacked[id(frames)] = (frames, np.array([f.axis for f in frames]),
                                        np.array([f.mouth for f in frames]))
    return known[1], known[2]


def approximate_offsets(bottom: np.ndarray, frames: list[SlotFrame]) -> tuple[np.ndarray, np.ndarray]:
    """socket_offsets for every socket at once, to within rounding: (depths, radials)."""
    axes, mouths = _stacked_frames(frames)
    v = bottom - mouths
    depth = np.einsum("ij,ij->i", v, axes)
    lateral = v - depth[:, None] * axes
    return depth, np.sqrt(np.einsum("ij,ij->i", lateral, lateral))


def radial_bound(contract: CentrifugeContract, axial_error_deg: float) -> float:
    """The largest radial offset of a tube's bottom centre the bore allows at this tilt
    (paper 8.1: bounded by the physical clearance), and the contact's penetration."""
    tilt = math.radians(min(abs(axial_error_deg), 90.0))
    return contract.rotor.bore_radius_m - contract.tube.radius_m * math.cos(tilt) \
        + contract.insertion.contact_penetration_m


def seat_check(obj: ObjectMeasurement, frames: list[SlotFrame], contract: CentrifugeContract) -> SeatCheck:
    """The predicate at one instant, for the slot whose axis the tube's bottom is nearest."""
    bottom, down = tube_bottom(obj, contract.tube.length_m)
    _depths, radials = approximate_offsets(bottom, frames)
    radials = radials.tolist()  # a few sockets: plain floats compare faster than numpy's reductions
    # numpy's min: NaN when any radial is NaN (then no socket is near and all are judged).
    reach = (math.nan if any(map(math.isnan, radials)) else min(radials, default=math.inf)) + SHORTLIST_MARGIN_M
    shortlist = [frames[j] for j, radial in enumerate(radials) if radial <= reach] or frames
    near = [(socket_offsets(bottom, f), f) for f in shortlist]
    (depth, radial), frame = min(near, key=lambda x: x[0][1])
    if radial > contract.rotor.mouth_radius_m:  # nowhere near any socket
        return SeatCheck(None)
    th = contract.insertion
    axial = math.degrees(math.acos(clip_unit(down @ frame.axis)))
    fraction = depth / contract.rotor.socket_depth_m
    contacts = set(obj.contacts)
    passed = []
    if depth > 0 and radial <= contract.rotor.bore_radius_m:
        passed.append("in_socket")
    if axial <= th.max_axial_error_deg:
        passed.append("aligned")
    if fraction >= th.min_depth_fraction:
        passed.append("deep")
    if radial <= radial_bound(contract, axial):
        passed.append("centred")
    if not contacts & set(ROBOT_CONTACTS):
        passed.append("released")
    if ROTOR in contacts:
        passed.append("supported")
    if obj.linear_speed <= th.max_linear_mps and obj.angular_speed <= th.max_angular_rps:
        passed.append("still")
    return SeatCheck(frame.index, axial, fraction, radial, tuple(passed))


class SeatTracker:
    """One tube's seating over time: confirmed when the predicate has held in the
    same slot for the contract's dwell (0.5 s), continuously; any break restarts it."""

    def __init__(self, contract: CentrifugeContract):
        self.dwell_s = contract.insertion.dwell_s
        self.since: float | None = None
        self.slot: int | None = None
        self.confirmed: int | None = None  # the slot it is confirmed in, while it stays

    def update(self, t: float, check: SeatCheck) -> int | None:
        """The slot confirmed at this instant (once per seating), else None."""
        if not check.seated:
            self.since, self.slot, self.confirmed = None, None, None
            return None
        if check.slot != self.slot or self.since is None:
            self.since, self.slot, self.confirmed = t, check.slot, None
        if self.confirmed is None and t - self.since >= self.dwell_s - 1e-9:
            self.confirmed = check.slot
            return check.slot
        return None
