"""Calibrated camera parameters for the registered fixed cameras.

The calibration is authorized evidence (as camera_info would be on a real
rig); it is read from the compiled scene model, never from object poses.
The front camera is world-mounted and the same in every layout.
"""
from __future__ import annotations

from functools import lru_cache

import mujoco

from labference_ros.policies.vision import CameraCalibration
from labference_ros.sim.weighing_scene import CAMERA_MODEL_NAMES

FIXED_CAMERAS = ("front",)  # the display camera moves with the balance layout


def calibration_from_model(model: mujoco.MjModel, data: mujoco.MjData, camera: str,
                           height: int, width: int) -> CameraCalibration:
    cid = model.camera(CAMERA_MODEL_NAMES[camera]).id
    return CameraCalibration(width=int(width), height=int(height),
                             fovy_deg=float(model.cam_fovy[cid]),
                             position=tuple(float(x) for x in data.cam_xpos[cid]),
                             rotation=tuple(float(x) for x in data.cam_xmat[cid]))


@lru_cache(maxsize=8)
def reference_calibration(camera: str, height: int, width: int) -> CameraCalibration:
    """Calibration of a fixed camera from a scene built for a canonical layout."""
    if camera not in FIXED_CAMERAS:
        raise ValueError(f"{camera!r} is not a fixed camera; fixed: {FIXED_CAMERAS}")
    from labference_ros.core.instance import WeighingInstance
    from labference_ros.core.layout import generate_layout
    from labference_ros.sim.weighing_scene import build_weighing_spec
    inst = WeighingInstance("calibration", "basic", 0, 0, 0, 0.0, 50.0, layout=generate_layout(0))
    model = build_weighing_spec(inst).compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    mujoco.mj_camlight(model, data)
    return calibration_from_model(model, data, camera, height, width)
