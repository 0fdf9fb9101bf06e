"""The rotor: n calibrated slots, each a socket mouth and a directed insertion
axis in the rotor-local frame (paper 8.1: "calibrated socket mouths and
directed insertion axes"), placed in the world by the rotor's pose.

Rotor-local frame: origin on the rotor axis at the height of the socket
mouths, z up. Slot j (zero-based) sits at angle 2 pi j / n about z; its axis
points into the socket, down and away from the rotor axis by `tilt_deg`, as
in a fixed-angle rotor (tube tops lean in, bottoms out; the sockets diverge
with depth, so neighbouring bores never meet). Rotating the rotor changes every slot's world coordinates
and keeps the local index relations, among them the opposite slot.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def opposite(j: int, n: int) -> int:
    """Paper 4.1: for an even n, slot j's opposite is (j + n/2) mod n."""
    if n % 2:
        raise ValueError(f"a rotor needs an even number of slots for opposite pairs, got {n}")
    if not 0 <= j < n:
        raise ValueError(f"slot {j} is not on a {n}-slot rotor")
    return (j + n // 2) % n


def slot_name(j: int) -> str:
    """The slot's label in operations and records (zero-based, as the paper counts)."""
    return f"slot_{j:02d}"


def slot_index(name: str) -> int:
    if not name.startswith("slot_") or not name[5:].isdigit():
        raise ValueError(f"{name!r} is not a slot label (slot_00, slot_01, ...)")
    return int(name[5:])


@dataclass(frozen=True)
class RotorGeometry:
    """The rotor's calibration (ours, declared and versioned in the contract)."""

    n_slots: int = 12
    mouth_radius_m: float = 0.055  # rotor axis to each socket mouth's centre
    tilt_deg: float = 30.0  # socket axis from vertical; its bottom lies further from the rotor axis
    socket_depth_m: float = 0.050  # effective depth: mouth to the seat along the axis
    bore_radius_m: float = 0.0085  # socket bore

    def __post_init__(self):
        opposite(0, self.n_slots)  # an even count, or a clear error

    def local_mouth(self, j: int) -> np.ndarray:
        a = 2 * math.pi * j / self.n_slots
        return np.array([self.mouth_radius_m * math.cos(a), self.mouth_radius_m * math.sin(a), 0.0])

    def local_axis(self, j: int) -> np.ndarray:
        a = 2 * math.pi * j / self.n_slots
        s, c = math.sin(math.radians(self.tilt_deg)), math.cos(math.radians(self.tilt_deg))
        return np.array([s * math.cos(a), s * math.sin(a), -c])


@dataclass(frozen=True)
class SlotFrame:
    index: int
    mouth: np.ndarray  # world position of the socket mouth's centre
    axis: np.ndarray  # unit, pointing into the socket

    @property
    def name(self) -> str:
        return slot_name(self.index)


@dataclass(frozen=True)
class RotorPose:
    """Where the rotor stands: its axis point at mouth height and its yaw about z."""

    center: tuple[float, float, float]
    yaw_rad: float = 0.0

    def rotation(self) -> np.ndarray:
        c, s = math.cos(self.yaw_rad), math.sin(self.yaw_rad)
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def slot_frames(geometry: RotorGeometry, pose: RotorPose) -> list[SlotFrame]:
    """Every slot's mouth and directed axis in the world (p' = R p + d, v' = R v)."""
    r, d = pose.rotation(), np.asarray(pose.center, dtype=float)
    return [SlotFrame(j, r @ geometry.local_mouth(j) + d, r @ geometry.local_axis(j))
            for j in range(geometry.n_slots)]
