"""Localization errors of a geometry report (paper eq. 2).

For a predicted position p_hat and unit directed axis v_hat against the
reference p* and v*:  e_p = ||p_hat - p*||,  e_v = arccos(clip(v_hat . v*, -1, 1)).
Zero or non-finite predictions are invalid outputs, never an error of 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GeometryError:
    valid: bool
    e_p: float | None = None  # metres
    e_v: float | None = None  # radians
    reason: str = ""

    def to_dict(self) -> dict:
        return {"valid": self.valid, "e_p_m": self.e_p, "e_v_rad": self.e_v, "reason": self.reason}


def _vector(x, n: int = 3):
    try:
        v = np.asarray(x, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        return None
    return v if v.shape == (n,) else None


def geometry_errors(p_hat, v_hat, p_ref, v_ref) -> GeometryError:
    p, v = _vector(p_hat), _vector(v_hat)
    if p is None or v is None:
        return GeometryError(False, reason="not_a_3_vector")
    if not (np.all(np.isfinite(p)) and np.all(np.isfinite(v))):
        return GeometryError(False, reason="non_finite_prediction")
    norm = float(np.linalg.norm(v))
    if norm == 0.0:
        return GeometryError(False, reason="zero_axis")
    if not np.any(p):
        return GeometryError(False, reason="zero_position")
    ref_p, ref_v = np.asarray(p_ref, dtype=float), np.asarray(v_ref, dtype=float)
    ref_v = ref_v / np.linalg.norm(ref_v)
    e_p = float(np.linalg.norm(p - ref_p))
    e_v = float(math.acos(float(np.clip(np.dot(v / norm, ref_v), -1.0, 1.0))))
    return GeometryError(True, e_p, e_v)


def clip_unit(value: float) -> float:
    """float(np.clip(value, -1.0, 1.0)) for one number (NaN stays NaN), without numpy's
    per-call dispatch: the recognisers take an arccos at every measurement."""
    value = float(value)
    return -1.0 if value < -1.0 else 1.0 if value > 1.0 else value


def body_axis(quaternion_wxyz) -> tuple[float, float, float]:
    """The body's +z axis in the world frame (a standard's directed up axis)."""
    w, x, y, z = (float(q) for q in quaternion_wxyz)
    return (2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y))


def standard_frames(objects) -> list[dict]:
    """Every standard's frame (body centre, directed up axis) from measured
    objects: what geometry Assist may supply (no masses, no goal)."""
    return [{"object": n, "position": [float(v) for v in o.position],
             "axis": [float(v) for v in body_axis(o.orientation)]}
            for n, o in sorted(objects.items()) if o.kind == "standard"]


def slide_to_height(centre, viewpoint, z: float, marker_above_centre: float) -> tuple[float, float, float]:
    """The object centre at height z whose top-face marker lies on the viewing ray through the
    marker of an upright object seen with its centre at `centre` from `viewpoint`."""
    marker = (centre[0], centre[1], centre[2] + marker_above_centre)
    span = marker[2] - viewpoint[2]
    if abs(span) < 1e-9:
        return centre
    scale = (z + marker_above_centre - viewpoint[2]) / span
    moved = tuple(viewpoint[i] + scale * (marker[i] - viewpoint[i]) for i in range(3))
    return (moved[0], moved[1], moved[2] - marker_above_centre)


# The marker on the cell's balance, by its name in the tracker's markers: its offset puts the
# reported point at the pan's centre, so the balance's pose is sensed rather than assumed.
BALANCE_MARKER = "balance"


def sensed_balance_xy(seen, pan_top_z: float, viewpoint) -> tuple[float, float]:
    """The pan centre's x and y from the balance's marker; seen by one camera (`viewpoint`),
    the reported point is slid along its viewing ray to the pan's height, which one camera
    fixes better than the marker's distance."""
    point = seen if viewpoint is None else slide_to_height(seen, viewpoint, pan_top_z, 0.0)
    return float(point[0]), float(point[1])


def balance_mismatch(sensed_xy, instance_xy, tolerance_m: float) -> str | None:
    """What the scene check says when the sensed balance stands farther than `tolerance_m`
    from where the instance puts it, else None."""
    off = math.dist(sensed_xy, instance_xy)
    if off <= tolerance_m:
        return None
    return (f"balance: its marker puts the pan at ({sensed_xy[0]:.3f}, {sensed_xy[1]:.3f}), the instance at "
            f"({instance_xy[0]:.3f}, {instance_xy[1]:.3f}): {off * 1000:.0f} mm off (tolerance "
            f"{tolerance_m * 1000:.0f} mm)")
