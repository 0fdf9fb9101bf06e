"""A camera's calibration read from a compiled scene model (the simulator's
side; tests and the Oracle's simulated world use it). Tested systems get the
same calibration from the cell description (perception/camera.py)."""
from __future__ import annotations

import mujoco

from labference_ros.mujoco_cell.panda_model import CAMERA_MODEL_NAMES
from labference_ros.perception.vision import CameraCalibration


def calibration_from_model(model: mujoco.MjModel, data: mujoco.MjData, camera: str,
                           height: int, width: int) -> CameraCalibration:
    cid = model.camera(CAMERA_MODEL_NAMES[camera]).id
    return CameraCalibration(width=int(width), height=int(height),
                             fovy_deg=float(model.cam_fovy[cid]),
                             position=tuple(float(x) for x in data.cam_xpos[cid]),
                             rotation=tuple(float(x) for x in data.cam_xmat[cid]))
