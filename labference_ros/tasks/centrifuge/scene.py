"""The centrifuge-loading scene as a MuJoCo model (simulator only: imported
lazily, never by the pure modules).

The cell (cell/centrifuge_cell.yaml: robot, table, cameras, tube shapes) with the
rotor at the instance's pose and the two tubes. The rotor is built from its
calibration (contract.rotor) in its own frame: for each slot a socket of thin
staves around the bore, aligned with the slot's directed insertion axis and
closed by a seat plate at the effective depth, under a hub plate with a mark at
slot 0 and a housing (visual only) down to the table. Every rotor geom belongs
to the body "rotor" (the rotor's contact identity, insertion.ROTOR), placed at
the instance's rotor pose, so the body's pose is the measured rotor pose.
Tubes are free bodies: a cylinder of the contract's radius and length, body +z
to the blue cap (visual); a tube seated at the start rests on its socket's seat,
one outside stands upright on the table.
"""
from __future__ import annotations

import math

import mujoco
import numpy as np

from labference_ros.cell.description import centrifuge_cell
from labference_ros.mujoco_cell.scene_base import cell_spec
from labference_ros.tasks.base import SimScene
from labference_ros.tasks.centrifuge.contract import CentrifugeContract, contract_for
from labference_ros.tasks.centrifuge.instances import CentrifugeInstance
from labference_ros.tasks.centrifuge.perception import CAP_LENGTH_M, MARK_RADIUS_M
from labference_ros.tasks.centrifuge.rotor import RotorPose, slot_frames

CELL = centrifuge_cell()
CAMERAS = ("front", "wrist")  # what the scene renders (the policy's registered cameras)
MARKER_CAMERA = "overhead"
STAVES = 12  # thin boxes around each bore
STAVE_THICKNESS_M = 0.004
CHAMFER_M = 0.008  # the funnel above each mouth, along its wall
CHAMFER_DEG = 40.0
HUB_THICKNESS_M = 0.004
HOUSING_RGBA = (0.30, 0.32, 0.36, 1.0)
HUB_RGBA = (0.62, 0.63, 0.68, 1.0)
KNOB = CELL.objects["rotor_knob"]  # the lid knob at the rotor's centre: what a camera finds the axis by
INDEX = CELL.objects["rotor_index"]  # the mark beside slot 0, as real rotors number their slots
TUBE_SOLREF = (0.004, 1.0)
TUBE_SOLIMP = (0.95, 0.99, 0.0005, 0.5, 2.0)
LOCAL = RotorPose((0.0, 0.0, 0.0), 0.0)  # the rotor's own frame
# The hidden-event condition's ready lamp: a green disc on a post beside the rotor (towards
# the front camera, away from the tube stand), visual only; the environment lights it
# (tasks/indicator_lamp.py) and perception.ready_lamp_lit sees it.
READY_LAMP_GEOM = "ready_lamp"
READY_LAMP_OFFSET_M = (0.13, -0.14)  # from the rotor's centre, world x and y
READY_LAMP_RADIUS_M = 0.011
READY_LAMP_HEIGHT_M = 0.05  # the disc's centre above the table
READY_ON_RGBA = (0.1, 1.0, 0.15, 1.0)
READY_OFF_RGBA = (0.05, 0.18, 0.06, 1.0)


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


def quat_z_to(up) -> list[float]:
    """The quaternion (w, x, y, z) turning +z onto `up`."""
    up = np.asarray(up, float) / np.linalg.norm(up)
    axis = np.cross([0.0, 0.0, 1.0], up)
    s = float(np.linalg.norm(axis))
    h = math.atan2(s, float(up[2])) / 2
    return [math.cos(h), *(math.sin(h) * axis / s)] if s > 1e-12 else [1.0, 0.0, 0.0, 0.0]


def add_rotor(spec: mujoco.MjSpec, contract: CentrifugeContract, pose: RotorPose, housing: bool = False) -> None:
    """The rotor's sockets (and, with `housing`, its hub, index mark and housing) at `pose`."""
    rotor = contract.rotor
    body = spec.worldbody.add_body(name="rotor", pos=list(pose.center), quat=_quat_from_matrix(pose.rotation()))
    depth, bore = rotor.socket_depth_m, rotor.bore_radius_m
    width = 2 * math.pi * (bore + STAVE_THICKNESS_M) / STAVES * 1.05
    for f in slot_frames(rotor, LOCAL):
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
        # The mouth's chamfer: the same staves leaning out by CHAMFER_DEG above the mouth, a
        # funnel that guides a tube a few millimetres off the axis into the bore.
        lean = math.radians(CHAMFER_DEG)
        for k in range(STAVES):
            a = 2 * math.pi * k / STAVES
            radial = basis[:, 0] * math.cos(a) + basis[:, 1] * math.sin(a)
            tangent = -basis[:, 0] * math.sin(a) + basis[:, 1] * math.cos(a)
            up = basis[:, 2] * math.cos(lean) + radial * math.sin(lean)  # along the funnel's wall
            normal = np.cross(tangent, up)  # out of the wall, away from the bore
            # The wall's inner face starts on the bore's edge at the mouth: no ledge to catch a tube on.
            centre_k = f.mouth + radial * bore + up * CHAMFER_M / 2 + normal * STAVE_THICKNESS_M / 2
            body.add_geom(name=f"rotor_slot{f.index:02d}_chamfer{k:02d}", type=mujoco.mjtGeom.mjGEOM_BOX,
                          size=[STAVE_THICKNESS_M / 2, width / 2, CHAMFER_M / 2], pos=list(centre_k),
                          quat=_quat_from_matrix(np.column_stack([normal, tangent, up])),
                          rgba=[0.6, 0.6, 0.65, 1.0])
        body.add_geom(name=f"rotor_slot{f.index:02d}_seat", type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                      size=[bore + STAVE_THICKNESS_M, STAVE_THICKNESS_M / 2],
                      pos=list(f.mouth + f.axis * (depth + STAVE_THICKNESS_M / 2)), quat=_quat_from_matrix(basis),
                      rgba=[0.5, 0.5, 0.55, 1.0])
    if not housing:
        return
    # Visual only: the hub plate just below the mouths (a ring would hide nothing a camera needs),
    # the index mark outside slot 0, the housing from the table up to the sockets' lower ends.

    body.add_geom(name="rotor_hub", type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                  size=[rotor.mouth_radius_m - bore - STAVE_THICKNESS_M, HUB_THICKNESS_M / 2],
                  pos=[0.0, 0.0, -HUB_THICKNESS_M / 2], rgba=list(HUB_RGBA), contype=0, conaffinity=0, group=1)
    body.add_geom(name="rotor_knob", type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[KNOB.radius, KNOB.height / 2],
                  pos=[0.0, 0.0, KNOB.height / 2], rgba=list(KNOB.rgba), contype=0, conaffinity=0, group=1)

    body.add_geom(name="rotor_index", type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[INDEX.radius, INDEX.height / 2],
                  pos=[MARK_RADIUS_M, 0.0, -INDEX.height / 2], rgba=list(INDEX.rgba), contype=0, conaffinity=0, group=1)
    tilt = math.radians(rotor.tilt_deg)
    low = -depth * math.cos(tilt)  # the sockets' lower ends below the mouths
    top_z = pose.center[2] + low
    body.add_geom(name="rotor_housing", type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                  size=[rotor.mouth_radius_m + depth * math.sin(tilt) + bore, top_z / 2],
                  pos=[0.0, 0.0, low - top_z / 2], rgba=list(HOUSING_RGBA), contype=0, conaffinity=0, group=1)


def add_ready_lamp(spec: mujoco.MjSpec, pose: RotorPose) -> None:
    x, y = pose.center[0] + READY_LAMP_OFFSET_M[0], pose.center[1] + READY_LAMP_OFFSET_M[1]
    top = CELL.table.top_z
    post = spec.worldbody.add_body(name="ready_lamp_post", pos=[x, y, top])
    post.add_geom(name="ready_lamp_post", type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                  size=[0.004, READY_LAMP_HEIGHT_M / 2], pos=[0.0, 0.0, READY_LAMP_HEIGHT_M / 2],
                  rgba=list(HOUSING_RGBA), contype=0, conaffinity=0, group=1)
    post.add_geom(name=READY_LAMP_GEOM, type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[READY_LAMP_RADIUS_M, 0, 0],
                  pos=[0.0, 0.0, READY_LAMP_HEIGHT_M], rgba=list(READY_OFF_RGBA), contype=0, conaffinity=0,
                  group=1)


def add_tube(spec: mujoco.MjSpec, contract: CentrifugeContract, name: str, pos, quat=(1.0, 0.0, 0.0, 0.0),
             rgba=(0.85, 0.85, 0.95, 1.0), cap_rgba=None) -> None:
    t = contract.tube
    body = spec.worldbody.add_body(name=name, pos=list(pos), quat=list(quat))
    body.add_freejoint(name=f"{name}_free")
    body.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[t.radius_m, t.length_m / 2],
                  mass=t.mass_kg, rgba=list(rgba), solref=list(TUBE_SOLREF), solimp=list(TUBE_SOLIMP),
                  priority=1, condim=4, friction=[0.15, 0.005, 0.0005])
    if cap_rgba is not None:
        body.add_geom(name=f"{name}_cap", type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                      size=[t.radius_m + 0.0005, CAP_LENGTH_M / 2], pos=[0.0, 0.0, (t.length_m - CAP_LENGTH_M) / 2],
                      rgba=list(cap_rgba), contype=0, conaffinity=0, density=0, group=1)


def seated_pose(contract: CentrifugeContract, pose: RotorPose, slot: int) -> tuple[list[float], list[float]]:
    """(body centre, quaternion) of a tube resting on the seat of `slot`."""
    f = slot_frames(contract.rotor, pose)[slot]
    bottom = f.mouth + f.axis * contract.rotor.socket_depth_m
    return list(bottom - f.axis * contract.tube.length_m / 2), quat_z_to(-f.axis)


def standing_pose(contract: CentrifugeContract, xy) -> tuple[list[float], list[float]]:
    """(body centre, quaternion) of a tube standing upright on the table at xy."""
    return [float(xy[0]), float(xy[1]), CELL.table.top_z + contract.tube.length_m / 2], [1.0, 0.0, 0.0, 0.0]


def rotor_spec(contract: CentrifugeContract, pose: RotorPose, timestep: float = 0.001) -> mujoco.MjSpec:
    """The rotor on a floor, no robot and no tubes: add them with add_tube."""
    spec = mujoco.MjSpec()
    spec.option.timestep = timestep
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[1.0, 1.0, 0.01])
    add_rotor(spec, contract, pose)
    return spec


def build_spec(instance: CentrifugeInstance, fiducials: bool = False) -> mujoco.MjSpec:
    """The scene of `instance`: the cell, the rotor at its pose, each tube seated or standing.
    fiducials: also the overhead camera (the centrifuge cell tracks no markers yet)."""
    contract = contract_for(instance.condition)
    cameras = ("front", MARKER_CAMERA) if fiducials else ("front",)
    spec = cell_spec(CELL, "labference_centrifuge", cameras)
    add_rotor(spec, contract, instance.rotor_pose, housing=True)
    if instance.external_event:
        add_ready_lamp(spec, instance.rotor_pose)
    cell = CELL.bound(instance.binding)  # the held-out tubes' colours (their size is the contract's)
    for name in contract.tubes:
        shape = cell.objects[name]
        if name in instance.seated:
            pos, quat = seated_pose(contract, instance.rotor_pose, instance.seated[name])
        elif name in instance.stand:
            pos, quat = standing_pose(contract, instance.stand[name])
        else:
            raise ValueError(f"instance {instance.instance_id} places {name} nowhere (neither seated nor on the stand)")
        cap = tuple(c / 255.0 for c in shape.label_rgb) + (1.0,)
        add_tube(spec, contract, name, pos, quat, rgba=shape.rgba, cap_rgba=cap)
    return spec


def sim_scene(instance: CentrifugeInstance, fiducials: bool = False) -> SimScene:
    """The scene as a simulator backend loads it: both tubes and the rotor measured (the
    rotor's pose places its slots), the front and wrist cameras (and the overhead one)."""
    contract = contract_for(instance.condition)
    return SimScene(spec=build_spec(instance, fiducials),
                    objects={**{name: "tube" for name in contract.tubes}, "rotor": "rotor"},
                    cameras=(*CAMERAS, MARKER_CAMERA) if fiducials else CAMERAS)
