"""The 3 x 4 tube rack of placement recall (paper 4.3, 8.3): hole labels, the
rack-local hole frames, and rigid transforms between the rack and the world,
among them the occluded environment transition's reconstruction (eq. 10).

Rack-local frame: origin at the centre of the rack's top face, z up, x along
the long edge (columns 1..4 in +x), y along the short edge (row A at +y, C at
-y). Hole A1 is the corner at (-x, +y), where the orientation marker sits.
The long edge on row A's side and the short edge on column 1's side have their
own colours, so every edge tells which way the rack faces. Moving the rack
changes every hole's world coordinates and keeps the local labels.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from labference_ros.cell.urdf import quat_to_matrix

ROWS = "ABC"
COLUMNS = 4
LABELS = tuple(f"{row}{col}" for row in ROWS for col in range(1, COLUMNS + 1))
# The border's four edges (asymmetric: the rack's facing is visible from any edge).
EDGE_RGBA = {"row_A": (0.10, 0.45, 0.20, 1.0),  # long edge beside row A: dark green
             "row_C": (0.85, 0.85, 0.85, 1.0),  # long edge beside row C: light grey
             "col_1": (0.95, 0.55, 0.10, 1.0),  # short edge beside column 1: orange
             "col_4": (0.20, 0.25, 0.55, 1.0)}  # short edge beside column 4: navy


def parse_label(label: str) -> tuple[int, int]:
    """(row index, column index), both zero-based, of a hole label such as "B3"."""
    if len(label) != 2 or label[0] not in ROWS or not label[1].isdigit() or not 1 <= int(label[1]) <= COLUMNS:
        raise ValueError(f"{label!r} is not a rack hole (A1..{ROWS[-1]}{COLUMNS})")
    return ROWS.index(label[0]), int(label[1]) - 1


@dataclass(frozen=True)
class RackGeometry:
    """The rack's calibration (ours, declared with the task family)."""

    pitch_m: float = 0.026  # hole centre to hole centre, along both edges
    wall_m: float = 0.004  # the guides between holes: each hole is a square of pitch - wall
    depth_m: float = 0.030  # top face to the hole's floor
    base_m: float = 0.006  # the floor plate under the holes
    rim_m: float = 0.008  # the rack's outer border beyond the outer guides

    @property
    def hole_half_m(self) -> float:
        """Half the side of a hole's square opening."""
        return (self.pitch_m - self.wall_m) / 2

    @property
    def half_size(self) -> tuple[float, float]:
        """Half the rack's footprint (x along the long edge, y along the short one)."""
        return (COLUMNS * self.pitch_m / 2 + self.rim_m, len(ROWS) * self.pitch_m / 2 + self.rim_m)

    def local_hole(self, label: str) -> np.ndarray:
        """The centre of a hole's opening in the rack's frame (on the top face)."""
        row, col = parse_label(label)
        return np.array([(col - (COLUMNS - 1) / 2) * self.pitch_m, ((len(ROWS) - 1) / 2 - row) * self.pitch_m, 0.0])

    def edge_boxes(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The border's four edges as boxes in the rack's frame: name -> (centre, half
        sizes). Each runs from the outermost guide line to the rack's outline, from the
        top face down to the holes' floor; the names say which row or column it borders."""
        w, d = self.wall_m, self.depth_m
        half_x, _half_y = self.half_size
        inner_x, inner_y = COLUMNS * self.pitch_m / 2, len(ROWS) * self.pitch_m / 2
        edge = w / 2 + self.rim_m
        along_y = inner_y - w / 2 + edge / 2  # the long edges' centres, off the middle
        along_x = inner_x - w / 2 + edge / 2  # the short edges' centres
        long_half = np.array([half_x, edge / 2, d / 2])
        short_half = np.array([edge / 2, inner_y - w / 2, d / 2])
        return {"row_A": (np.array([0.0, along_y, -d / 2]), long_half),
                "row_C": (np.array([0.0, -along_y, -d / 2]), long_half),
                "col_1": (np.array([-along_x, 0.0, -d / 2]), short_half),
                "col_4": (np.array([along_x, 0.0, -d / 2]), short_half)}

@dataclass(frozen=True)
class RackPose:
    """Where the rack stands: the centre of its top face and its yaw about z."""

    center: tuple[float, float, float]
    yaw_rad: float = 0.0

    def rotation(self) -> np.ndarray:
        c, s = math.cos(self.yaw_rad), math.sin(self.yaw_rad)
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])

    def matrix(self) -> np.ndarray:
        """T_world,rack (4 x 4)."""
        t = np.eye(4)
        t[:3, :3] = self.rotation()
        t[:3, 3] = self.center
        return t


def hole_positions(geometry: RackGeometry, pose: RackPose) -> dict[str, np.ndarray]:
    """Every hole's opening centre in the world (p' = R p + d)."""
    r, d = pose.rotation(), np.asarray(pose.center, dtype=float)
    return {label: r @ geometry.local_hole(label) + d for label in LABELS}


def to_local(point_world, pose: RackPose) -> np.ndarray:
    """A world point in the rack's frame."""
    return pose.rotation().T @ (np.asarray(point_world, dtype=float) - np.asarray(pose.center, dtype=float))


def hole_under(point_world, geometry: RackGeometry, pose: RackPose, margin_m: float = 0.0) -> str:
    """The hole whose opening (grown by margin_m) contains the point's xy in the rack's
    frame, or "" over a guide, the rim or beside the rack."""
    local = to_local(point_world, pose)
    x, y = local[0], local[1]
    reach = geometry.hole_half_m + margin_m
    for label, centre_x, centre_y in _hole_centres(geometry):
        if max(abs(x - centre_x), abs(y - centre_y)) <= reach:
            return label
    return ""


@functools.lru_cache(maxsize=16)
def _hole_centres(geometry: RackGeometry) -> tuple[tuple[str, float, float], ...]:
    """(label, x, y) of every hole's opening in the rack's frame, in LABELS order: the
    referee asks hole_under at every measurement, always of the same rack."""
    return tuple((label, float(c[0]), float(c[1])) for label in LABELS for c in [geometry.local_hole(label)])


def pose_matrix(position, quat_wxyz) -> np.ndarray:
    """T (4 x 4) of a position and a quaternion (w, x, y, z)."""
    t = np.eye(4)
    t[:3, :3] = quat_to_matrix(quat_wxyz)
    t[:3, 3] = [float(p) for p in position]
    return t


def quat_of(t: np.ndarray) -> tuple[float, float, float, float]:
    """The unit quaternion (w, x, y, z, w >= 0) of T's rotation."""
    r = t[:3, :3]
    trace = r[0, 0] + r[1, 1] + r[2, 2]
    if trace > 0:
        s = 2 * math.sqrt(trace + 1)
        q = (s / 4, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s)
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = 2 * math.sqrt(1 + r[0, 0] - r[1, 1] - r[2, 2])
        q = ((r[2, 1] - r[1, 2]) / s, s / 4, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s)
    elif r[1, 1] > r[2, 2]:
        s = 2 * math.sqrt(1 + r[1, 1] - r[0, 0] - r[2, 2])
        q = ((r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, s / 4, (r[1, 2] + r[2, 1]) / s)
    else:
        s = 2 * math.sqrt(1 + r[2, 2] - r[0, 0] - r[1, 1])
        q = ((r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, s / 4)
    n = math.sqrt(sum(c * c for c in q))
    sign = 1.0 if q[0] >= 0 else -1.0
    return tuple(sign * c / n for c in q)


def relative(t_world_rack: np.ndarray, t_world_tube: np.ndarray) -> np.ndarray:
    """T_rack,tube: a tube's pose in the rack's frame."""
    return np.linalg.inv(t_world_rack) @ t_world_tube


def rebuilt(t_world_rack_new: np.ndarray, t_rack_tube: np.ndarray) -> np.ndarray:
    """Paper eq. 10: T'_world,tube = T'_world,rack T_rack,tube."""
    return t_world_rack_new @ t_rack_tube


def rotation_error_deg(a: np.ndarray, b: np.ndarray) -> float:
    """The angle of the rotation between two poses' orientations."""
    r = a[:3, :3].T @ b[:3, :3]
    return math.degrees(math.acos(max(-1.0, min(1.0, (np.trace(r) - 1) / 2))))
