"""Camera calibrations as a lab knows them: extrinsics from the cell
description's mounts, image size from camera_info. No simulator involved:
a real rig computes the same calibration from the same description."""
from __future__ import annotations

import math

import numpy as np

from labference_ros.cell.description import CellDescription
from labference_ros.cell.urdf import camera_matrix
from labference_ros.perception.vision import CameraCalibration


def world_camera_calibration(camera: str, height: int, width: int, cell: CellDescription) -> CameraCalibration:
    """Pinhole calibration of a world-fixed camera (e.g. "front") of `cell` (a family's,
    TaskFamily.cell_description)."""
    mount = cell.cameras[camera]
    if mount.parent != "world":
        raise ValueError(f"camera {camera!r} is mounted on {mount.parent!r}, not fixed in the world")
    rot = camera_matrix(mount)
    if not math.isclose(float(np.linalg.det(rot)), 1.0, abs_tol=1e-9):
        raise ValueError(f"camera {camera!r}: mount orientation is not a rotation")
    return CameraCalibration(width=int(width), height=int(height), fovy_deg=float(mount.fovy_deg),
                             position=tuple(float(v) for v in mount.position),
                             rotation=tuple(float(v) for v in rot.reshape(9)))
