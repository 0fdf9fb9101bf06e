"""Static frames of the simulated cell for /tf_static: the links of the cell
URDF (cell/urdf.py) at this layout's poses, and the cameras' frames (a cell
without a balance has the table and the cameras).

Poses are read from the compiled MuJoCo model (after mj_forward), so they are
the simulator's bodies by construction. Each frame is given relative to its
parent in the cell URDF (world -> table -> balance_body -> pan_load_cell and
balance_display); a camera has a frame as MuJoCo's camera (looks along -z, +y
up) on the link that carries it (the wrist camera rides on panda_hand), and a
ROS optical frame below it (z forward, x right, y down) that the images name.
"""
from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from labference_ros.cell.description import LOAD_CELL_FRAME, CellDescription
from labference_ros.mujoco_cell.panda_model import CAMERA_MODEL_NAMES, PANDA_PREFIX, camera_quat

# MuJoCo cameras look along -z with +y up; the optical frame is that turned half round x.
OPTICAL_FROM_CAMERA = (0.0, 1.0, 0.0, 0.0)  # w, x, y, z
# The link that carries a camera, by the cell description's mount parent, as in the cell URDF.
MOUNT_LINKS = {"world": "world", "hand": f"{PANDA_PREFIX}hand", "balance_display": "balance_display"}


@dataclass(frozen=True)
class Frame:
    parent: str
    child: str
    translation: tuple[float, float, float]
    quaternion: tuple[float, float, float, float]  # w, x, y, z


def camera_frame_id(camera: str) -> str:
    """The frame_id lab_sim stamps on the camera's images and camera_info (optical)."""
    return f"{camera}_camera_optical_frame"


def _pose(model: mujoco.MjModel, data: mujoco.MjData, kind: str, name: str) -> np.ndarray:
    """4x4 world pose of a body, site or camera (identity for 'world')."""
    T = np.eye(4)
    if name == "world":
        return T
    if kind == "body":
        i = model.body(name).id
        T[:3, :3], T[:3, 3] = data.xmat[i].reshape(3, 3), data.xpos[i]
    elif kind == "site":
        i = model.site(name).id
        T[:3, :3], T[:3, 3] = data.site_xmat[i].reshape(3, 3), data.site_xpos[i]
    else:
        i = model.camera(name).id
        T[:3, :3], T[:3, 3] = data.cam_xmat[i].reshape(3, 3), data.cam_xpos[i]
    return T


def _frame(parent: str, child: str, T_parent: np.ndarray, T_child: np.ndarray) -> Frame:
    rel = np.linalg.inv(T_parent) @ T_child
    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(rel[:3, :3]).reshape(9))
    if q[0] < 0:
        q = -q
    return Frame(parent, child, tuple(float(v) for v in rel[:3, 3]), tuple(float(v) for v in q))


def cell_frames(model: mujoco.MjModel, data: mujoco.MjData, cell: CellDescription) -> list[Frame]:
    """Fixture and camera frames of a loaded scene of `cell` (data must be forwarded)."""
    world = _pose(model, data, "body", "world")
    # The table top is the world's z = 0 plane; the table link sits at the origin.
    frames = [Frame("world", "table", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))]
    if cell.balance is not None:
        balance = _pose(model, data, "body", "balance_body")
        frames += [_frame("table", "balance_body", world, balance),
                   _frame("balance_body", LOAD_CELL_FRAME, balance, _pose(model, data, "site", LOAD_CELL_FRAME)),
                   _frame("balance_body", "balance_display", balance, _pose(model, data, "body", "balance_display"))]
    for camera, mount in cell.cameras.items():
        parent = MOUNT_LINKS[mount.parent]
        model_name = CAMERA_MODEL_NAMES.get(camera, camera)
        if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, model_name) >= 0:
            T_parent = _pose(model, data, "body", parent)
            frames.append(_frame(parent, f"{camera}_camera", T_parent, _pose(model, data, "camera", model_name)))
        else:
            # A camera this scene does not render (the marker camera outside the rehearsal) is still
            # mounted in the cell: its frame comes from the description, as in the URDF.
            frames.append(Frame(parent, f"{camera}_camera", tuple(float(v) for v in mount.position),
                                tuple(float(v) for v in camera_quat(mount))))
        frames.append(Frame(f"{camera}_camera", camera_frame_id(camera), (0.0, 0.0, 0.0), OPTICAL_FROM_CAMERA))
    return frames
