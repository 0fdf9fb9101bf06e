"""What the front camera shows of the rotor and the tubes, from pixels and the camera's
calibration alone (for the non-privileged centrifuge system).

The rotor's axis is found by the red lid knob at its centre, slot 0 by the orange mark
beside it, and every tube by its blue cap: a cap near the axis is a seated tube's, any
other a standing tube's. Each blob centre is back-projected onto the horizontal plane
at the height of what it shows; the heights come from the rotor's calibration and the
cell (what a lab knows of its own centrifuge), never from the simulator.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from labference_ros.cell.description import centrifuge_cell
from labference_ros.perception.vision import CameraCalibration, colour_components
from labference_ros.tasks.centrifuge.contract import CentrifugeContract
from labference_ros.tasks.centrifuge.instances import ROTOR_CENTER

CELL = centrifuge_cell()
CAP_RGB = CELL.objects["tube_a"].label_rgb
KNOB, INDEX = CELL.objects["rotor_knob"], CELL.objects["rotor_index"]
CAP_LENGTH_M = 0.012  # the blue cap: the tube's top 12 mm
MOUTH_Z = ROTOR_CENTER[2]  # the socket mouths' height above the table (the rotor model's)
NEAR_AXIS_M = 0.065  # a cap this close to the axis sits in a socket
MARK_RADIUS_M = 0.0775  # the slot-0 mark's distance from the axis, just outside the sockets


@dataclass(frozen=True)
class RotorSighting:
    centre: tuple[float, float, float] | None  # the rotor axis at the mouths' height
    index_angle: float | None = None  # world angle of slot 0 about the axis (the orange mark)
    seated_angles: tuple[float, ...] = ()  # world angle about the axis of each seated tube's cap
    standing: tuple[tuple[float, float, float], ...] = field(default_factory=tuple)  # standing tubes' centres


def seated_cap_height(contract: CentrifugeContract) -> tuple[float, float]:
    """(height, distance from the axis) of a seated tube's cap centre."""
    rotor, tube = contract.rotor, contract.tube
    above = tube.length_m - rotor.socket_depth_m - CAP_LENGTH_M / 2  # along the axis, above the mouth
    tilt = math.radians(rotor.tilt_deg)
    return MOUTH_Z + above * math.cos(tilt), rotor.mouth_radius_m - above * math.sin(tilt)


def sight(image: np.ndarray, calib: CameraCalibration, contract: CentrifugeContract) -> RotorSighting:
    knobs = colour_components(image, KNOB.label_rgb, min_area=3)
    if not knobs:
        return RotorSighting(None)
    cx, cy = calib.on_plane(knobs[0][0], knobs[0][1], MOUTH_Z + KNOB.height)
    index = None
    marks = colour_components(image, INDEX.label_rgb, min_area=1)
    if marks:
        index = _angle_on_circle(calib, marks[0][:2], (cx, cy), MARK_RADIUS_M, MOUTH_Z)
    cap_z, cap_radius = seated_cap_height(contract)
    stand_z = CELL.table.top_z + contract.tube.length_m - CAP_LENGTH_M / 2
    seated, standing = [], []
    for u, v, _area in _one_per_cap(colour_components(image, CAP_RGB, min_area=2), calib, cap_z):
        x, y = calib.on_plane(u, v, cap_z)
        if math.hypot(x - cx, y - cy) < NEAR_AXIS_M:
            seated.append(_angle_on_circle(calib, (u, v), (cx, cy), cap_radius, cap_z))
        else:
            x, y = calib.on_plane(u, v, stand_z)
            standing.append((x, y, CELL.table.top_z + contract.tube.length_m / 2))
    return RotorSighting((cx, cy, MOUTH_Z), index, tuple(seated), tuple(standing))


def _angle_on_circle(calib: CameraCalibration, pixel, centre, radius: float, z: float) -> float:
    """The angle about the axis of a feature known to lie `radius` from it near height z:
    where the pixel's ray meets that vertical cylinder (of its two crossings, the one
    nearer z), so the depth the camera sees worst does not turn into an angle error."""
    o, d = np.asarray(calib.position, float), calib.ray(*pixel)
    p = o[:2] - np.asarray(centre, float)
    a, b, c = float(d[:2] @ d[:2]), 2 * float(p @ d[:2]), float(p @ p) - radius * radius
    disc = b * b - 4 * a * c
    if disc < 0:  # the ray passes outside: its nearest approach
        s = -b / (2 * a)
    else:
        roots = [(-b - math.sqrt(disc)) / (2 * a), (-b + math.sqrt(disc)) / (2 * a)]
        s = min(roots, key=lambda r: abs(o[2] + r * d[2] - z))
    x, y = (o + s * d)[:2] - np.asarray(centre, float)
    return math.atan2(y, x)


def _one_per_cap(blobs, calib: CameraCalibration, z: float) -> list[tuple[float, float, int]]:
    """A cap a highlight cuts in two is one tube: blobs closer in the image than a cap's
    width (at that depth) are merged at their area-weighted centroid; largest first."""
    groups: list[list[tuple[float, float, int]]] = []
    for u, v, area in blobs:  # largest first
        x, y = calib.on_plane(u, v, z)
        depth = float(np.linalg.norm(np.array([x, y, z]) - np.asarray(calib.position)))
        width_px = 2 * CELL.objects["tube_a"].radius * calib.focal_px / depth
        for group in groups:
            gu, gv, _a = group[0]
            if math.hypot(u - gu, v - gv) < 1.5 * width_px:
                group.append((u, v, area))
                break
        else:
            groups.append([(u, v, area)])
    merged = []
    for g in groups:
        total = sum(a for _u, _v, a in g)
        merged.append((sum(u * a for u, _v, a in g) / total, sum(v * a for _u, v, a in g) / total, total))
    return merged


def slot_at(sighting: RotorSighting, angle: float, contract: CentrifugeContract) -> tuple[np.ndarray, np.ndarray]:
    """(mouth, unit axis into the socket) of the slot at `angle` about the seen axis."""
    rotor = contract.rotor
    c, s = math.cos(angle), math.sin(angle)
    tilt = math.radians(rotor.tilt_deg)
    mouth = np.asarray(sighting.centre) + rotor.mouth_radius_m * np.array([c, s, 0.0])
    return mouth, np.array([math.sin(tilt) * c, math.sin(tilt) * s, -math.cos(tilt)])


# The hidden-event condition's ready lamp (scene.READY_LAMP_*): a bright green disc beside
# the rotor, the only saturated green in the cell. Lit: this many such pixels or more in
# the front image (about 40 at 320x240; the dark lamp and everything else give none).
LAMP_MIN_PIXELS = 6


def ready_lamp_lit(image: np.ndarray) -> bool:
    """The front camera shows the ready lamp lit (pixels alone)."""
    px = np.asarray(image, dtype=np.int32)
    r, g, b = px[..., 0], px[..., 1], px[..., 2]
    return int(((g > 170) & (r < 100) & (b < 100)).sum()) >= LAMP_MIN_PIXELS
