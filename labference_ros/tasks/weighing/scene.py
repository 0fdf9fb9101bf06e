"""The feedback-weighing scene, built with mujoco.MjSpec from an instance.

Everything placed here comes from the cell description (cell/weighing_cell.yaml:
robot, cameras, table, balance, object shapes), instance.layout (layout seed)
and the sample mass (task seed), so one instance gives one model.
"""
from __future__ import annotations

import cv2
import mujoco
import numpy as np

from labference_ros.cell import display_layout as dl
from labference_ros.cell.description import LABEL_LIFT_M, LOAD_CELL_FRAME, ObjectShape, weighing_cell
from labference_ros.mujoco_cell.panda_model import camera_quat, frame_quat
from labference_ros.mujoco_cell.scene_base import cell_spec
from labference_ros.core.measurements import BALANCE_BODY, PAN
from labference_ros.perception.fiducials import marker_image
from labference_ros.tasks.base import SimScene
from labference_ros.tasks.weighing.instance import WeighingInstance
from labference_ros.tasks.weighing.layout import BALANCE, start_places
from labference_ros.tasks.weighing.objects import SAMPLE, STANDARD_MASSES_G, STANDARDS

CELL = weighing_cell()
PAN_SITE = LOAD_CELL_FRAME
MARKER_CAMERA = "overhead"  # the world-fixed camera the fiducial scene adds for marker tracking
STANDARD_SHAPES: dict[str, ObjectShape] = {name: CELL.objects[name] for name in STANDARDS}
SAMPLE_SHAPE = CELL.objects[SAMPLE]
# Label disc colour per standard: distinct even where text is unreadable.
LABEL_COLOURS = CELL.label_colours()

# Contacts of the light objects win (priority) and are stiff: MuJoCo's soft
# contact lets a squeezed object sink by about (1-d)/d * f / (m k), which for
# a 10 g standard at the default solref is centimetres, so fingers close
# straight through it.
OBJECT_SOLREF = (0.005, 1.0)
OBJECT_SOLIMP = (0.95, 0.99, 0.001, 0.5, 2.0)


def object_shape(name: str, binding: str | None = None) -> ObjectShape:
    """The object's shape in the cell with `binding`'s objects (the default ones: None)."""
    if not binding:
        return SAMPLE_SHAPE if name == SAMPLE else STANDARD_SHAPES[name]
    return CELL.bound(binding).objects[name]


def _label_texture(spec: mujoco.MjSpec, name: str) -> str:
    """A texture with the denomination printed on it, drawn with OpenCV."""
    size = 64
    img = np.full((size, size, 3), LABEL_COLOURS[name], np.uint8)
    text = f"{STANDARD_MASSES_G[name]}"
    scale = 0.9 if len(text) < 3 else 0.7
    (tw, th), _ = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, 2)
    cv2.putText(img, text, ((size - tw) // 2, (size + th) // 2 - 4), cv2.FONT_HERSHEY_SIMPLEX,
                scale, (10, 10, 10), 2, cv2.LINE_AA)
    cv2.putText(img, "g", (size // 2 - 5, size - 6), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (10, 10, 10), 1,
                cv2.LINE_AA)
    tex = spec.add_texture(name=f"label_{name}", type=mujoco.mjtTexture.mjTEXTURE_2D,
                           width=size, height=size, nchannel=3)
    # Rotated so the text reads upright from the front camera (+x, looking -x).
    tex.data = np.ascontiguousarray(np.rot90(img, k=1)).tobytes()
    spec.add_material(name=f"label_{name}", textures=["", f"label_{name}"])
    return f"label_{name}"


def _marker_texture(spec: mujoco.MjSpec, name: str, binding: str | None = None, marker_id: int | None = None) -> str:
    """The object's ArUco marker: dark cells black, light cells in its label colour (white
    on the sample and the balance), so the label's colour still tells the standards apart
    in other cameras."""
    marker_id = object_shape(name, binding).marker_id if marker_id is None else marker_id
    cell_px = 8
    grey = marker_image(marker_id, cell_px * 6)  # 4x4 bits and a one-cell border
    colour = np.asarray(LABEL_COLOURS.get(name, (255, 255, 255)), np.float64)
    img = np.ascontiguousarray((grey[..., None] / 255.0 * colour).astype(np.uint8))
    tex = spec.add_texture(name=f"marker_{name}", type=mujoco.mjtTexture.mjTEXTURE_2D,
                           width=img.shape[1], height=img.shape[0], nchannel=3)
    tex.data = img.tobytes()  # as printed: MuJoCo's first row is the marker's top seen from above
    spec.add_material(name=f"marker_{name}", textures=["", f"marker_{name}"])
    return f"marker_{name}"


def _add_object(spec: mujoco.MjSpec, name: str, xy, z_bottom: float, mass_kg: float,
                fiducials: bool = False, binding: str | None = None) -> None:
    shape = object_shape(name, binding)
    body = spec.worldbody.add_body(name=name, pos=[xy[0], xy[1], z_bottom + shape.height / 2])
    body.add_freejoint(name=f"{name}_free")
    if shape.kind == "block":  # a square block, its sides along the world axes
        geom_type, size = mujoco.mjtGeom.mjGEOM_BOX, [shape.radius, shape.radius, shape.height / 2]
    else:
        geom_type, size = mujoco.mjtGeom.mjGEOM_CYLINDER, [shape.radius, shape.height / 2, 0]
    body.add_geom(name=f"{name}_geom", type=geom_type,
                  size=size, mass=mass_kg, rgba=list(shape.rgba),
                  condim=4, friction=[1.0, 0.005, 0.0001], priority=1,
                  solref=list(OBJECT_SOLREF), solimp=list(OBJECT_SOLIMP))
    if fiducials and shape.marker_id is not None:
        material = _marker_texture(spec, name, binding)
    elif name in STANDARD_SHAPES:
        material = _label_texture(spec, name)
    else:
        return
    # Thin visual square on the top face carries the printed label (or marker).
    half = shape.label_side / 2
    body.add_geom(name=f"{name}_label", type=mujoco.mjtGeom.mjGEOM_BOX,
                  size=[half, half, LABEL_LIFT_M / 2],
                  pos=[0, 0, shape.height / 2 + LABEL_LIFT_M / 2], material=material,
                  contype=0, conaffinity=0, density=0, group=1)


READY_LAMP_GEOM = "ready_lamp"


def _add_balance(spec: mujoco.MjSpec, bxy, ready_lamp: bool = False, fiducials: bool = False) -> None:
    bx, by = bxy
    g = BALANCE
    housing = spec.worldbody.add_body(name="balance_body", pos=[bx, by, 0])
    housing.add_geom(name="balance_housing", type=mujoco.mjtGeom.mjGEOM_BOX,
                     size=[g.housing_half_x, g.housing_half_y, g.housing_height / 2],
                     pos=[0, 0, g.housing_height / 2], rgba=list(dl.BEZEL_RGBA))
    ledge_h = g.ledge_height
    housing.add_geom(name="balance_ledge", type=mujoco.mjtGeom.mjGEOM_BOX,
                     size=[g.ledge_depth / 2, g.housing_half_y, ledge_h / 2],
                     pos=[g.housing_half_x + g.ledge_depth / 2, 0, ledge_h / 2],
                     rgba=list(dl.BEZEL_RGBA))
    # Display panel tilted towards +x (away from the robot), read along +y.
    tilt = np.deg2rad(g.display_tilt_deg)
    normal = np.array([np.sin(tilt), 0.0, np.cos(tilt)])
    x_axis = np.array([0.0, 1.0, 0.0])
    y_axis = np.cross(normal, x_axis)
    panel_pos = list(g.display_position)
    panel = housing.add_body(name="balance_display", pos=panel_pos,
                             quat=frame_quat(x_axis, y_axis, normal))
    hx, hy = dl.PANEL_HALF
    panel.add_geom(name="display_bezel", type=mujoco.mjtGeom.mjGEOM_BOX,
                   size=[hx + 0.006, hy + 0.006, 0.004], pos=[0, 0, -0.0045],
                   rgba=list(dl.BEZEL_RGBA), contype=0, conaffinity=0)
    panel.add_geom(name="display_panel", type=mujoco.mjtGeom.mjGEOM_BOX, size=[hx, hy, 0.0005],
                   rgba=list(dl.PANEL_RGBA), contype=0, conaffinity=0)
    for i in range(dl.N_DIGITS):
        for seg, (cx, cy, sx, sy) in dl.segment_boxes(i).items():
            panel.add_geom(name=f"seg_{i}_{seg}", type=mujoco.mjtGeom.mjGEOM_BOX,
                           size=[sx, sy, 0.0003], pos=[cx, cy, 0.0008],
                           rgba=list(dl.SEG_OFF_RGBA), contype=0, conaffinity=0)
    cx, cy, sx, sy = dl.decimal_point_box()
    panel.add_geom(name="seg_dp", type=mujoco.mjtGeom.mjGEOM_BOX, size=[sx, sy, 0.0003],
                   pos=[cx, cy, 0.0008], rgba=list(dl.SEG_ON_RGBA), contype=0, conaffinity=0)
    lx, ly = dl.LIGHT_XY
    panel.add_geom(name="stability_light", type=mujoco.mjtGeom.mjGEOM_BOX,
                   size=[dl.LIGHT_HALF, dl.LIGHT_HALF, 0.0003], pos=[lx, ly, 0.0008],
                   rgba=list(dl.LIGHT_OFF_RGBA), contype=0, conaffinity=0)
    if ready_lamp:  # the hidden-event condition's cue; the environment lights it (environment.py)
        rx, ry = dl.READY_LAMP_XY
        panel.add_geom(name=READY_LAMP_GEOM, type=mujoco.mjtGeom.mjGEOM_BOX,
                       size=[dl.LIGHT_HALF, dl.LIGHT_HALF, 0.0003], pos=[rx, ry, 0.0008],
                       rgba=list(dl.READY_OFF_RGBA), contype=0, conaffinity=0)
    display_cam = CELL.cameras["display"]
    panel.add_camera(name="display", pos=list(display_cam.position), quat=camera_quat(display_cam),
                     fovy=display_cam.fovy_deg)

    # The pan: welded to the world (no joint), read by a force sensor at its
    # origin. Only loads resting on it may touch it.
    pan = spec.worldbody.add_body(name="pan", pos=[bx, by, g.pan_top_z])
    pan.add_geom(name="pan_plate", type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                 size=[g.pan_radius, g.pan_thickness / 2, 0], pos=[0, 0, -g.pan_thickness / 2], rgba=[0.8, 0.8, 0.82, 1],
                 friction=[1.0, 0.005, 0.0001], condim=4)
    pan.add_geom(name="pan_post", type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[0.01, 0.006, 0],
                 pos=[0, 0, -0.009], rgba=[0.3, 0.3, 0.3, 1], contype=0, conaffinity=0)
    pan.add_site(name=PAN_SITE, pos=[0, 0, 0], size=[0.005] * 3)
    if fiducials and g.marker_id is not None:  # where the balance stands, for the scene check
        half = g.marker_side / 2
        mx, my = g.marker_xy
        housing.add_geom(name="balance_marker", type=mujoco.mjtGeom.mjGEOM_BOX,
                         size=[half, half, LABEL_LIFT_M / 2], pos=[mx, my, g.housing_height + LABEL_LIFT_M / 2],
                         material=_marker_texture(spec, "balance", marker_id=g.marker_id),
                         contype=0, conaffinity=0, density=0, group=1)
    spec.add_sensor(name="pan_force", type=mujoco.mjtSensor.mjSENS_FORCE,
                    objtype=mujoco.mjtObj.mjOBJ_SITE, objname=PAN_SITE)
    spec.add_sensor(name="pan_torque", type=mujoco.mjtSensor.mjSENS_TORQUE,
                    objtype=mujoco.mjtObj.mjOBJ_SITE, objname=PAN_SITE)


def build_weighing_spec(instance: WeighingInstance, fiducials: bool = False) -> mujoco.MjSpec:
    """The scene of `instance`. fiducials: markers on the objects' top faces (cell marker_id)
    and the overhead marker camera, as the rehearsal of a real cell sees them."""
    missing = [k for k in ("balance", SAMPLE, *STANDARDS) if k not in instance.layout]
    if missing:
        raise ValueError(f"instance layout lacks {missing}; fill it with tasks.weighing.layout.generate_layout")
    CELL.bound(instance.binding)  # an unknown binding: ValueError naming the known ones
    spec = cell_spec(CELL, "labference_weighing", ("front", MARKER_CAMERA) if fiducials else ("front",))
    _add_balance(spec, instance.layout["balance"], ready_lamp=bool(instance.external_event), fiducials=fiducials)
    places = start_places(instance)
    for name in STANDARDS:
        x, y, surface_z = places[name]
        _add_object(spec, name, (x, y), surface_z, STANDARD_MASSES_G[name] / 1000.0, fiducials, instance.binding)
    x, y, surface_z = places[SAMPLE]
    _add_object(spec, SAMPLE, (x, y), surface_z, instance.sample_mass_g / 1000.0, fiducials, instance.binding)
    return spec


def sim_scene(instance: WeighingInstance, fiducials: bool = False) -> SimScene:
    """The scene as a simulator backend loads it: the standards and the sample measured,
    the balance's bodies as fixtures, its pan's load cell, the three cameras (and the
    marker camera with fiducials)."""
    cameras = ("front", "wrist", "display", MARKER_CAMERA) if fiducials else ("front", "wrist", "display")
    return SimScene(spec=build_weighing_spec(instance, fiducials),
                    objects={**{name: "standard" for name in STANDARDS}, SAMPLE: "sample"}, cameras=cameras,
                    fixtures={"pan": PAN, "balance_body": BALANCE_BODY, "balance_display": BALANCE_BODY},
                    load_cell_site=PAN_SITE)
