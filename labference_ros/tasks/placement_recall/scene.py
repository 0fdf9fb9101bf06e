"""The placement-recall scene as a MuJoCo model (simulator only: imported lazily,
never by the pure modules).

The cell (cell/placement_cell.yaml: robot, table, cameras, tube shapes) with the
3 x 4 rack at the instance's pose, the marked release region on the table, the
target tube upright on the table and, in extended instances, three distractors
seated in their holes. The rack is one mocap body "rack" (the environment moves
it during the occluded transition; nothing the robot does can): a floor plate,
passive guides between the holes (each hole a square well of its own), and an
outer border whose four edges have four colours, with a red A1 marker on the
corner at A1. Tubes are free bodies: a cylinder, body +z to the cap (visual); their
shape is the instance's binding's (CellDescription.bound: the default tubes, or a held-out
binding's).
"""
from __future__ import annotations

from dataclasses import dataclass

import mujoco

from labference_ros.cell.description import CellDescription, placement_cell
from labference_ros.mujoco_cell.scene_base import cell_spec
from labference_ros.tasks.base import SimScene
from labference_ros.tasks.placement_recall.contract import RACK_OBJECT, TCP_OBJECT
from labference_ros.tasks.placement_recall.instances import CAP_COLOURS, RELEASE_REGION, TARGET, PlacementInstance
from labference_ros.tasks.placement_recall.rack import COLUMNS, EDGE_RGBA, ROWS, RackGeometry, RackPose

CELL = placement_cell()
CAMERAS = ("front", "wrist")
RACK = RackGeometry()
RACK_BODY = RACK_OBJECT
CAP_LENGTH_M = 0.012
TUBE_MASS_KG = 0.012
TUBE_SOLREF = (0.004, 1.0)
TUBE_SOLIMP = (0.95, 0.99, 0.0005, 0.5, 2.0)
GUIDE_RGBA = (0.80, 0.80, 0.82, 1.0)
FLOOR_RGBA = (0.70, 0.70, 0.72, 1.0)
A1_MARKER_RGBA = (0.85, 0.10, 0.10, 1.0)
RELEASE_RGBA = (0.20, 0.70, 0.30, 0.45)


@dataclass(frozen=True)
class TubeShape:
    radius_m: float
    length_m: float
    mass_kg: float = TUBE_MASS_KG


def tube_shape(name: str, cell: CellDescription = CELL) -> TubeShape:
    shape = cell.objects[name]
    return TubeShape(shape.radius, shape.height)


def top_z(geometry: RackGeometry = RACK) -> float:
    """Height of the rack's top face when it stands on the table."""
    return CELL.table.top_z + geometry.base_m + geometry.depth_m


def _yaw_quat(yaw: float) -> list[float]:
    import math

    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]


def add_rack(spec: mujoco.MjSpec, pose: RackPose, geometry: RackGeometry = RACK) -> None:
    """The rack as the mocap body RACK_BODY at `pose` (pose.center: its top face's centre)."""
    body = spec.worldbody.add_body(name=RACK_BODY, pos=list(pose.center), quat=_yaw_quat(pose.yaw_rad), mocap=True)
    p, w, d, b, rim = geometry.pitch_m, geometry.wall_m, geometry.depth_m, geometry.base_m, geometry.rim_m
    half_x, half_y = geometry.half_size
    box = mujoco.mjtGeom.mjGEOM_BOX
    body.add_geom(name="rack_floor", type=box, size=[half_x, half_y, b / 2], pos=[0.0, 0.0, -d - b / 2],
                  rgba=list(FLOOR_RGBA))
    inner_x, inner_y = COLUMNS * p / 2, len(ROWS) * p / 2
    # Guides: walls between neighbouring holes (one square well per hole).
    for k in range(1, len(ROWS)):
        y = inner_y - k * p
        body.add_geom(name=f"rack_guide_row{k}", type=box, size=[inner_x, w / 2, d / 2], pos=[0.0, y, -d / 2],
                      rgba=list(GUIDE_RGBA))
    for k in range(1, COLUMNS):
        x = -inner_x + k * p
        body.add_geom(name=f"rack_guide_col{k}", type=box, size=[w / 2, inner_y, d / 2], pos=[x, 0.0, -d / 2],
                      rgba=list(GUIDE_RGBA))
    # The border: each edge a wall from the outermost guide line to the rack's outline.
    for edge, (centre, half) in geometry.edge_boxes().items():
        body.add_geom(name=f"rack_edge_{edge}", type=box, size=half.tolist(), pos=centre.tolist(),
                      rgba=list(EDGE_RGBA[edge]))
    # The A1 marker: a flat red disc on the border's corner beside A1 (visual only).
    marker_r = rim * 0.45
    body.add_geom(name="rack_a1_marker", type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[marker_r, 0.0008],
                  pos=[-(half_x - rim / 2), half_y - rim / 2, 0.0008], rgba=list(A1_MARKER_RGBA),
                  contype=0, conaffinity=0, group=1)


def add_tube(spec: mujoco.MjSpec, name: str, pos, quat=(1.0, 0.0, 0.0, 0.0), cap: str = "blue",
             cell: CellDescription = CELL) -> None:
    shape, look = tube_shape(name, cell), cell.objects[name]
    body = spec.worldbody.add_body(name=name, pos=list(pos), quat=list(quat))
    body.add_freejoint(name=f"{name}_free")
    body.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[shape.radius_m, shape.length_m / 2],
                  mass=shape.mass_kg, rgba=list(look.rgba), solref=list(TUBE_SOLREF), solimp=list(TUBE_SOLIMP),
                  priority=1, condim=4, friction=[0.15, 0.005, 0.0005])
    rgb = CAP_COLOURS[cap]
    body.add_geom(name=f"{name}_cap", type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                  size=[shape.radius_m + 0.0005, CAP_LENGTH_M / 2],
                  pos=[0.0, 0.0, (shape.length_m - CAP_LENGTH_M) / 2], rgba=[c / 255.0 for c in rgb] + [1.0],
                  contype=0, conaffinity=0, density=0, group=1)


def seated_position(name: str, label: str, pose: RackPose, geometry: RackGeometry = RACK,
                    cell: CellDescription = CELL) -> list[float]:
    """Body centre of a tube standing upright on the floor of hole `label`."""
    from labference_ros.tasks.placement_recall.rack import hole_positions

    mouth = hole_positions(geometry, pose)[label]
    return [float(mouth[0]), float(mouth[1]), float(mouth[2]) - geometry.depth_m + tube_shape(name, cell).length_m / 2]


def standing_position(name: str, xy, cell: CellDescription = CELL) -> list[float]:
    """Body centre of a tube standing upright on the table at xy."""
    return [float(xy[0]), float(xy[1]), CELL.table.top_z + tube_shape(name, cell).length_m / 2]


def add_release_region(spec: mujoco.MjSpec) -> None:
    (cx, cy), (hx, hy) = RELEASE_REGION
    spec.worldbody.add_geom(name="release_region", type=mujoco.mjtGeom.mjGEOM_BOX, size=[hx, hy, 0.0005],
                            pos=[cx, cy, CELL.table.top_z + 0.0005], rgba=list(RELEASE_RGBA),
                            contype=0, conaffinity=0, group=1)


def _check_height(instance: PlacementInstance) -> None:
    if abs(instance.rack_center[2] - top_z()) > 1e-6:
        raise ValueError(f"instance {instance.instance_id}: the rack's top face at z={instance.rack_center[2]} "
                         f"does not stand on the table (expected {top_z():.4f})")


def add_grip_point(spec: mujoco.MjSpec) -> None:
    """The grip point as a body of its own on the hand (no geoms, no mass), so that a
    backend measures it like an object: the retrieval recogniser's `tcp`."""
    spec.body(f"{CELL.robot.prefix}hand").add_body(name=TCP_OBJECT, pos=list(CELL.robot.tcp_offset))


def build_spec(instance: PlacementInstance) -> mujoco.MjSpec:
    """The scene of `instance` before the robot acts: the rack at its first pose, the
    distractors in their holes, the target upright on the table; the tubes are the
    instance's binding's."""
    _check_height(instance)
    cell = CELL.bound(instance.binding)
    spec = cell_spec(CELL, "labference_placement", ("front",))
    add_grip_point(spec)
    add_rack(spec, instance.rack_pose)
    add_release_region(spec)
    add_tube(spec, TARGET, standing_position(TARGET, instance.target_start, cell), cap=instance.cap_colours[TARGET],
             cell=cell)
    for name, label in sorted(instance.distractors.items()):
        add_tube(spec, name, seated_position(name, label, instance.rack_pose, cell=cell),
                 cap=instance.cap_colours[name], cell=cell)
    return spec


def sim_scene(instance: PlacementInstance) -> SimScene:
    """The scene as a simulator backend loads it: every tube, the rack and the grip point
    measured."""
    return SimScene(spec=build_spec(instance),
                    objects={**{t: "tube" for t in instance.tubes}, RACK_BODY: "rack", TCP_OBJECT: "gripper"},
                    cameras=CAMERAS)
