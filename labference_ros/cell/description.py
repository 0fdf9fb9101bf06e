"""The lab cell as data (cell/*.yaml): robot joints, limits and home pose,
camera mounts, fixture geometry, object shapes and label colours.

Pure Python (PyYAML only): the simulator, the URDF generator, tested systems
and a real rig's tools all read the same description.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import yaml

from labference_ros.core.robots import RobotModel, robot_model

CELL_DIR = Path(__file__).resolve().parent
CELL_SCHEMA = 1
LOAD_CELL_FRAME = "pan_load_cell"  # the balance's load cell: its URDF link and the scene's sensed site
# The square printed on a top face: the label disc's box (half side 0.69 r), raised
# LABEL_LIFT_M above the face. A marker, where there is one, fills the same square.
LABEL_SIDE_PER_RADIUS = 1.38
LABEL_LIFT_M = 0.0008
# An object's body: an upright cylinder, or a square block standing on a face with its
# sides along the world axes (the fingers close across two of them).
OBJECT_KINDS = ("cylinder", "block")
# The objects a cell's condition binds when it names no binding.
DEFAULT_BINDING = "default"
# The simulator's robot models (MuJoCo Menagerie) and the arm each one is.
SIM_MODELS = {"franka_panda": "panda"}


@dataclass(frozen=True)
class RobotDescription:
    model: str
    prefix: str
    arm_joints: tuple[str, ...]
    finger_joints: tuple[str, ...]
    home: tuple[float, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    gripper_max_width: float
    tcp_offset: tuple[float, float, float]
    # The arm a real rig of this cell has (core.robots: its names, limits and franka_ros2's
    # namespaces); the simulator keeps `model`, the Menagerie Panda.
    rig_model: str = "fr3"

    @property
    def sim_robot(self) -> RobotModel:
        """The simulated arm's names and limits (the Menagerie Panda's are the Panda's)."""
        return robot_model(SIM_MODELS[self.model])

    @property
    def rig_robot(self) -> RobotModel:
        return robot_model(self.rig_model)


@dataclass(frozen=True)
class CameraMount:
    """A camera frame in its parent body: position plus either a look-at target
    (optionally with the image x axis fixed) or an explicit quaternion (w, x, y, z).
    MuJoCo convention: the camera looks along its -z axis, image up is +y."""
    name: str
    parent: str
    position: tuple[float, float, float]
    fovy_deg: float
    look_at: tuple[float, float, float] | None = None
    image_x_axis: tuple[float, float, float] | None = None
    quaternion: tuple[float, float, float, float] | None = None


@dataclass(frozen=True)
class BalanceFixture:
    housing_half_x: float
    housing_half_y: float
    housing_height: float
    ledge_depth: float
    ledge_height: float
    display_tilt_deg: float
    display_raise: float
    pan_radius: float
    pan_thickness: float
    pan_top_z: float
    slot_offsets: tuple[tuple[float, float], ...]
    nominal_xy: tuple[float, float]
    # The ArUco (4x4_50) marker on the housing's top face where markers are tracked (the
    # rehearsal scene), face up at marker_xy from the balance centre: it tells where the
    # balance stands (marker name "balance").
    marker_id: int | None = None
    marker_side: float = 0.025
    marker_xy: tuple[float, float] = (0.0, 0.0)

    @property
    def footprint_half_x(self) -> tuple[float, float]:
        """Extent behind (-x) and in front (+x) of the balance centre."""
        return self.housing_half_x, self.housing_half_x + self.ledge_depth

    def slot_xy(self, index: int, balance_xy) -> tuple[float, float]:
        """Where the pan's slot `index` is with the balance at balance_xy (world x, y)."""
        dx, dy = self.slot_offsets[index]
        return balance_xy[0] + dx, balance_xy[1] + dy

    @property
    def display_position(self) -> tuple[float, float, float]:
        """The readout panel's centre in the balance frame."""
        return (self.housing_half_x + self.ledge_depth / 2, 0.0, self.ledge_height + self.display_raise)


@dataclass(frozen=True)
class ObjectShape:
    """An upright cylinder, or an upright square block (kind "block"). radius: half the
    width the fingers close across (a cylinder's radius, half a block's side)."""
    name: str
    radius: float
    height: float
    rgba: tuple[float, float, float, float]
    label_rgb: tuple[int, int, int] | None = None
    marker_id: int | None = None  # the ArUco (4x4_50) marker on its top face, where markers are tracked
    kind: str = "cylinder"

    def __post_init__(self):
        if self.kind not in OBJECT_KINDS:
            raise ValueError(f"object {self.name}: unknown kind {self.kind!r} (known: {', '.join(OBJECT_KINDS)})")

    @property
    def label_side(self) -> float:
        """Side of the square printed on the top face (the label, or the marker that fills it)."""
        return self.radius * LABEL_SIDE_PER_RADIUS


@dataclass(frozen=True)
class TableDescription:
    centre: tuple[float, float, float]
    half_size: tuple[float, float, float]
    rgba: tuple[float, float, float, float]

    @property
    def top_z(self) -> float:
        """Height of the table top (the robot base stands on it)."""
        return self.centre[2] + self.half_size[2]


@dataclass(frozen=True)
class CellDescription:
    name: str
    robot: RobotDescription
    table: TableDescription
    cameras: dict[str, CameraMount]
    balance: BalanceFixture | None  # None: a cell without a balance (the centrifuge cell)
    objects: dict[str, ObjectShape]
    # Object bindings (held-out objects): binding name -> the objects it replaces, each
    # another object of the same role (same name, same label and marker) with another
    # geometry. The default binding is `objects` as they are.
    bindings: dict[str, dict[str, ObjectShape]] = field(default_factory=dict)

    def bound(self, binding: str | None) -> "CellDescription":
        """The cell with `binding`'s objects in place of the ones they replace (the cell
        itself for the default binding). An unknown binding raises ValueError."""
        if binding in (None, "", DEFAULT_BINDING):
            return self
        if binding not in self.bindings:
            known = ", ".join([DEFAULT_BINDING, *sorted(self.bindings)])
            raise ValueError(f"cell {self.name} has no object binding {binding!r} (known: {known})")
        return replace(self, objects={**self.objects, **self.bindings[binding]}, bindings={})

    def label_colours(self) -> dict[str, tuple[int, int, int]]:
        return {n: o.label_rgb for n, o in self.objects.items() if o.label_rgb is not None}

    def marker_table(self) -> dict[str, dict]:
        """The fiducial tracker's markers_json: each marked object's marker id, printed side
        and its centre in the marker frame (the marker lies on the top face, face up); and
        the balance's marker, where the cell has one."""
        table = {n: {"id": o.marker_id, "length_m": round(o.label_side, 6),
                     "offset_m": [0.0, 0.0, -round(o.height / 2 + LABEL_LIFT_M, 6)]}
                 for n, o in self.objects.items() if o.marker_id is not None}
        b = self.balance
        if b is not None and b.marker_id is not None:
            # The balance's, named as the world estimator's balance_marker reads it: the reported
            # point is the pan's centre on its top face. The balance stands square to the table,
            # so the marker frame's axes are the world's (its image's top edge towards +y).
            table["balance"] = {"id": b.marker_id, "length_m": round(b.marker_side, 6),
                                "offset_m": [-round(b.marker_xy[0], 6), -round(b.marker_xy[1], 6),
                                             round(b.pan_top_z - b.housing_height - LABEL_LIFT_M, 6)]}
        return table


def _tuple(value) -> tuple:
    return tuple(_tuple(v) if isinstance(v, list) else v for v in value)


def parse_cell(data: dict) -> CellDescription:
    if data.get("schema") != CELL_SCHEMA:
        raise ValueError(f"unsupported cell description schema {data.get('schema')!r} (expected {CELL_SCHEMA})")
    robot = RobotDescription(**{k: _tuple(v) if isinstance(v, list) else v for k, v in data["robot"].items()})
    table = TableDescription(**{k: _tuple(v) for k, v in data["table"].items()})
    cameras = {}
    for name, cam in data["cameras"].items():
        fields = {k: _tuple(v) if isinstance(v, list) else v for k, v in cam.items()}
        cameras[name] = CameraMount(name=name, **fields)
    balance = None
    if data.get("balance") is not None:
        balance = BalanceFixture(**{k: _tuple(v) if isinstance(v, list) else v for k, v in data["balance"].items()})
    objects = _objects(data["objects"])
    bindings = {}
    for binding, replaced in (data.get("bindings") or {}).items():
        unknown = sorted(set(replaced) - set(objects))
        if binding == DEFAULT_BINDING or unknown:
            raise ValueError(f"cell {data['name']}: binding {binding!r} "
                             + (f"replaces objects the cell has not: {unknown}" if unknown else "is reserved"))
        bindings[binding] = _objects(replaced)
    return CellDescription(name=data["name"], robot=robot, table=table, cameras=cameras, balance=balance,
                           objects=objects, bindings=bindings)


def _objects(data: dict) -> dict[str, ObjectShape]:
    objects = {}
    for name, obj in data.items():
        fields = {k: _tuple(v) if isinstance(v, list) else v for k, v in obj.items()}
        objects[name] = ObjectShape(name=name, **fields)
    return objects


def load_cell(path: str | Path) -> CellDescription:
    with open(path, encoding="utf-8") as f:
        return parse_cell(yaml.safe_load(f))


@lru_cache(maxsize=None)
def common_cell() -> CellDescription:
    """What every cell shipped in cell/ has alike: the robot, the table and the cameras
    mounted the same in each (front, wrist); no fixtures and no objects. What does not
    depend on a task reads it (the robot's models and kinematics, the workspace box, the
    arm bridges); a family's own pieces read its cell (TaskFamily.cell_description)."""
    cells = [load_cell(path) for path in sorted(CELL_DIR.glob("*_cell.yaml"))]
    first = cells[0]
    for cell in cells[1:]:
        if (cell.robot, cell.table) != (first.robot, first.table):
            raise ValueError(f"cell {cell.name} mounts another robot or table than {first.name}: "
                             "the shared robot models would not be its own")
    cameras = {name: mount for name, mount in first.cameras.items()
               if all(cell.cameras.get(name) == mount for cell in cells[1:])}
    return CellDescription(name="labference_common_cell", robot=first.robot, table=first.table, cameras=cameras,
                           balance=None, objects={})


@lru_cache(maxsize=None)
def weighing_cell() -> CellDescription:
    """The feedback-weighing cell shipped with the package."""
    return load_cell(CELL_DIR / "weighing_cell.yaml")


@lru_cache(maxsize=None)
def centrifuge_cell() -> CellDescription:
    """The centrifuge-loading cell shipped with the package: the same robot, table and
    cameras, a rotor instead of the balance (its calibration is the contract's)."""
    return load_cell(CELL_DIR / "centrifuge_cell.yaml")


@lru_cache(maxsize=None)
def placement_cell() -> CellDescription:
    """The placement-recall cell shipped with the package: the same robot, table and
    cameras, a tube rack (its geometry is the task module's) and four tubes."""
    return load_cell(CELL_DIR / "placement_cell.yaml")
