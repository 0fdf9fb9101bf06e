"""Camera calibrations as a lab knows them: extrinsics from the cell
description's mounts, image size from camera_info. No simulator involved:
a real rig computes the same calibration from the same description."""
from __future__ import annotations

import math

import numpy as np

from labference_ros.cell.description import CellDescription, weighing_cell
from labference_ros.perception.vision import CameraCalibration


def _quat_to_matrix(q) -> np.ndarray:
    w, x, y, z = (float(v) for v in q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _look_at(position, target) -> np.ndarray:
    pos, tgt = np.asarray(position, float), np.asarray(target, float)
    z = pos - tgt
    z /= np.linalg.norm(z)
    x = np.cross(np.array([0.0, 0.0, 1.0]), z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def world_camera_calibration(camera: str, height: int, width: int,
                             cell: CellDescription | None = None) -> CameraCalibration:
    """Pinhole calibration of a world-fixed camera (e.g. "front")."""
    cell = cell or weighing_cell()
    mount = cell.cameras[camera]
    if mount.parent != "world":
        raise ValueError(f"camera {camera!r} is mounted on {mount.parent!r}, not fixed in the world")
    if mount.quaternion is not None:
        rot = _quat_to_matrix(mount.quaternion)
    else:
        rot = _look_at(mount.position, mount.look_at)
    if not math.isclose(float(np.linalg.det(rot)), 1.0, abs_tol=1e-9):
        raise ValueError(f"camera {camera!r}: mount orientation is not a rotation")
    return CameraCalibration(width=int(width), height=int(height), fovy_deg=float(mount.fovy_deg),
                             position=tuple(float(v) for v in mount.position),
                             rotation=tuple(float(v) for v in rot.reshape(9)))
