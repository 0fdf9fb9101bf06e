"""The centrifuge rotor and tubes as a MuJoCo scene (simulator only: imported
lazily, never by the pure modules).

The rotor is built from its calibration (contract.rotor): for each slot a
socket of thin staves around the bore, aligned with the slot's directed
insertion axis, closed by a seat plate at the effective depth. Every rotor geom
is named "rotor_..." so contacts with it read as the rotor (insertion.ROTOR).
Tubes are free bodies: a cylinder of the contract's radius and length, body +z
to the cap.

What this module does not yet do: add the robot, the cameras and the table
from the cell description (the weighing scene's job today), so an episode
cannot run in it; it is the rotor and tube physics the insertion predicate is
checked against.
"""
from __future__ import annotations

import math

import mujoco
import numpy as np

from labference_ros.tasks.centrifuge.contract import CentrifugeContract
from labference_ros.tasks.centrifuge.rotor import RotorPose, slot_frames

STAVES = 12  # thin boxes around each bore
STAVE_THICKNESS_M = 0.004
TUBE_SOLREF = (0.004, 1.0)
TUBE_SOLIMP = (0.95, 0.99, 0.0005, 0.5, 2.0)


def _quat_from_matrix(r: np.ndarray) -> list[float]:
    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(r, dtype=float).reshape(-1))
    return [float(v) for v in q]


def _socket_basis(axis: np.ndarray) -> np.ndarray:
    """Columns x, y, z with z = -axis (pointing out of the socket, up its bore)."""
    z = -axis / np.linalg.norm(axis)
    helper = np.array([0.0, 0.0, 1.0]) if abs(z[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def add_rotor(spec: mujoco.MjSpec, contract: CentrifugeContract, pose: RotorPose) -> None:
    rotor = contract.rotor
    body = spec.worldbody.add_body(name="rotor")
    depth, bore = rotor.socket_depth_m, rotor.bore_radius_m
    width = 2 * math.pi * (bore + STAVE_THICKNESS_M) / STAVES * 1.05
    for f in slot_frames(rotor, pose):
        basis = _socket_basis(f.axis)
        centre = f.mouth + f.axis * depth / 2
        for k in range(STAVES):
            a = 2 * math.pi * k / STAVES
            radial = basis[:, 0] * math.cos(a) + basis[:, 1] * math.sin(a)
            tangent = -basis[:, 0] * math.sin(a) + basis[:, 1] * math.cos(a)
            r = np.column_stack([radial, tangent, basis[:, 2]])
            body.add_geom(name=f"rotor_slot{f.index:02d}_stave{k:02d}", type=mujoco.mjtGeom.mjGEOM_BOX,
                          size=[STAVE_THICKNESS_M / 2, width / 2, depth / 2],
                          pos=list(centre + radial * (bore + STAVE_THICKNESS_M / 2)), quat=_quat_from_matrix(r),
                          rgba=[0.6, 0.6, 0.65, 1.0])
        body.add_geom(name=f"rotor_slot{f.index:02d}_seat", type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                      size=[bore + STAVE_THICKNESS_M, STAVE_THICKNESS_M / 2],
                      pos=list(f.mouth + f.axis * (depth + STAVE_THICKNESS_M / 2)), quat=_quat_from_matrix(basis),
                      rgba=[0.5, 0.5, 0.55, 1.0])


def add_tube(spec: mujoco.MjSpec, contract: CentrifugeContract, name: str, pos, quat=(1.0, 0.0, 0.0, 0.0),
             rgba=(0.85, 0.85, 0.95, 1.0)) -> None:
    t = contract.tube
    body = spec.worldbody.add_body(name=name, pos=list(pos), quat=list(quat))
    body.add_freejoint(name=f"{name}_free")
    body.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[t.radius_m, t.length_m / 2],
                  mass=t.mass_kg, rgba=list(rgba), solref=list(TUBE_SOLREF), solimp=list(TUBE_SOLIMP),
                  priority=1, condim=3, friction=[0.15, 0.005, 0.0005])


def rotor_spec(contract: CentrifugeContract, pose: RotorPose, timestep: float = 0.001) -> mujoco.MjSpec:
    """The rotor on a floor, no tubes: add them with add_tube."""
    spec = mujoco.MjSpec()
    spec.option.timestep = timestep
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[1.0, 1.0, 0.01])
    add_rotor(spec, contract, pose)
    return spec
