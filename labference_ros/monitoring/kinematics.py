"""Robot link transforms from joint states, by the URDF's kinematics (yourdfpy).

What robot_state_publisher does on a full install: every joint of the robot
subtree (below the robot's root link) becomes one parent -> child transform;
fixed ones once on /tf_static, moving ones on /tf at each joint state.
"""
from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import trimesh.transformations
import yourdfpy


@dataclass(frozen=True)
class Transform:
    parent: str
    child: str
    translation: tuple[float, float, float]
    quaternion: tuple[float, float, float, float]  # w, x, y, z


def matrix_to_quaternion(R: np.ndarray) -> tuple[float, float, float, float]:
    """Rotation matrix -> unit quaternion (w, x, y, z), w >= 0."""
    from scipy.spatial.transform import Rotation

    x, y, z, w = Rotation.from_matrix(R).as_quat()
    q = np.array([w, x, y, z])
    if q[0] < 0:
        q = -q
    return tuple(float(v) for v in q)


def to_transform(parent: str, child: str, T: np.ndarray) -> Transform:
    return Transform(parent, child, tuple(float(v) for v in T[:3, 3]), matrix_to_quaternion(T[:3, :3]))


class RobotKinematics:
    """One URDF's robot subtree below `root` (the joint into `root` included)."""

    def __init__(self, urdf_xml: str, root: str):
        self.urdf = yourdfpy.URDF.load(io.StringIO(urdf_xml), build_scene_graph=False, load_meshes=False)
        joints = self.urdf.robot.joints
        into_root = [j for j in joints if j.child == root]
        if not into_root:
            raise ValueError(f"URDF has no joint into {root!r}")
        below = {root}
        changed = True
        while changed:
            changed = False
            for j in joints:
                if j.parent in below and j.child not in below:
                    below.add(j.child)
                    changed = True
        self.joints = into_root + [j for j in joints if j.parent in below]
        self.fixed = [j for j in self.joints if j.type == "fixed"]
        self.moving = [j for j in self.joints if j.type != "fixed"]
        self.links = sorted(below)

    @property
    def moving_joint_names(self) -> list[str]:
        return [j.name for j in self.moving]

    def static_transforms(self) -> list[Transform]:
        return [to_transform(j.parent, j.child, self._origin(j)) for j in self.fixed]

    def moving_transforms(self, positions: dict[str, float]) -> list[Transform]:
        """Transforms of the moving joints at these positions (missing joints stay at 0)."""
        return [to_transform(j.parent, j.child, self.joint_transform(j, float(positions.get(j.name, 0.0))))
                for j in self.moving]

    def joint_transform(self, joint, q: float) -> np.ndarray:
        """Parent -> child of one joint: its origin, then the motion along its axis."""
        motion = np.eye(4)
        axis = np.asarray(joint.axis, float)
        if joint.type in ("revolute", "continuous"):
            motion = trimesh.transformations.rotation_matrix(q, axis)
        elif joint.type == "prismatic":
            motion[:3, 3] = q * axis
        else:
            raise ValueError(f"joint {joint.name}: unsupported type {joint.type}")
        return self._origin(joint) @ motion

    @staticmethod
    def _origin(joint) -> np.ndarray:
        return np.eye(4) if joint.origin is None else np.asarray(joint.origin, float)
