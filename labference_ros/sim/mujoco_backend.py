"""MuJoCo implementation of SimBackend for any task family's scene.

The family builds the scene (TaskFamily.build_scene: a tasks.base.SimScene) and
says which bodies are measured objects and fixtures, which cameras it renders and
whether a load cell is in it; the robot, the gripper, stepping, measurement,
rendering and checkpoints are the same for every family. The balance's load cell
and its seven-segment display exist only where the scene has them (weighing)."""
from __future__ import annotations

import hashlib
import json
import math
import struct
from dataclasses import dataclass, field

import mujoco
import numpy as np

from labference_ros.cell import display_layout as dl
from labference_ros.mujoco_cell.panda_model import CAMERA_MODEL_NAMES, GRIPPER_CTRL_RANGE, GRIPPER_KP, HOME_ARM_Q, PANDA_PREFIX
from labference_ros.core.measurements import (
    LEFT_FINGER,
    PAN,
    RIGHT_FINGER,
    ROBOT,
    TABLE,
    ObjectMeasurement,
    WorldMeasurement,
)
from labference_ros.sim.backend import (
    ARM_JOINT_NAMES,
    FINGER_JOINT_NAMES,
    CommandCheck,
    EntityState,
    GripperState,
    JointState,
    SimBackend,
    Wrench,
)
from labference_ros.sim.command_validation import validate_arm_command, validate_gripper_command
from labference_ros.tasks import DEFAULT_FAMILY
from labference_ros.tasks import family as task_family
from labference_ros.tasks.base import Instance

MARKER_CAMERA = "overhead"  # the world-fixed camera a fiducial scene adds for marker tracking

STATE_SPEC = mujoco.mjtState.mjSTATE_INTEGRATION  # includes ctrl and the warm start
BLOB_MAGIC = b"LFSIM1"
SETTLE_S = 0.3  # objects settle on their supports before t = 0


@dataclass(frozen=True)
class RenderSettings:
    width: int = 128
    height: int = 128
    # Per-camera (height, width) overrides, e.g. {"front": (240, 320)}.
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    # False draws the robot's collision geoms instead of its 135k-face
    # visual meshes: about 4x faster on llvmpipe, plainer images.
    visual_meshes: bool = True
    # Markers on the objects' top faces and the overhead marker camera (the family's build_scene).
    fiducials: bool = False

    def size(self, camera: str) -> tuple[int, int]:
        return self.sizes.get(camera, (self.height, self.width))


@dataclass
class _GripperCommand:
    target_width: float = 0.08
    grasp: bool = False
    force: float = 0.0
    epsilon_inner: float = 0.005
    epsilon_outer: float = 0.005
    closing: bool = False
    ramp_goal: float = 0.04  # actuator ctrl (tendon length = width/2) to ramp to
    ramp_rate: float = 0.0  # ctrl change per physics step; 0 = not ramping
    final_ctrl: float = 0.04  # set once the ramp arrives (grasp preload)


def model_hash(model: mujoco.MjModel) -> str:
    """sha256 (16 hex) of a compiled model's binary form: the same scene gives the same hash."""
    buffer = np.zeros(mujoco.mj_sizeModel(model), np.uint8)
    mujoco.mj_saveModel(model, None, buffer)
    return hashlib.sha256(buffer.tobytes()).hexdigest()[:16]


class MujocoBackend(SimBackend):
    def __init__(self, render: RenderSettings | None = None, task: str = DEFAULT_FAMILY):
        self.render_settings = render or RenderSettings()
        self.family = task_family(task)
        # The cameras every scene of the family renders (known before a scene is loaded).
        self.cameras = (*self.family.cameras, MARKER_CAMERA) if self.render_settings.fiducials else self.family.cameras
        self.model: mujoco.MjModel | None = None
        self.data: mujoco.MjData | None = None
        self.instance: Instance | None = None
        self._renderers: dict[tuple[int, int], mujoco.Renderer] = {}
        self._scene_hash = ""
        self.has_load_cell = self._has_display = False  # what the loaded scene has

    # loading -----------------------------------------------------------------
    def load(self, instance: Instance) -> None:
        self.close()
        self.instance = instance
        scene = self.family.build_scene(instance, fiducials=self.render_settings.fiducials)
        if tuple(scene.cameras) != tuple(self.cameras):
            raise ValueError(f"{self.family.name} scene renders {scene.cameras}, expected {self.cameras}")
        m = scene.spec.compile()
        self._scene_hash = model_hash(m)  # before render settings and the display texture change it
        # The offscreen framebuffer must fit the largest configured image.
        sizes = [self.render_settings.size(c) for c in self.cameras]
        m.vis.global_.offheight = max(m.vis.global_.offheight, *(h for h, _ in sizes))
        m.vis.global_.offwidth = max(m.vis.global_.offwidth, *(w for _, w in sizes))
        d = mujoco.MjData(m)
        self.model, self.data = m, d
        self._index_model(scene)
        if self.has_load_cell:
            self._check_sensing_axis()
            self._empty_wrench = self._measure_empty_pan()
        mujoco.mj_resetData(m, d)
        d.qpos[self._arm_qadr] = HOME_ARM_Q
        d.qpos[self._finger_qadr] = 0.04
        d.ctrl[:7] = HOME_ARM_Q
        d.ctrl[7] = 0.04
        self._gripper = _GripperCommand()
        self._display = (float("nan"), False)
        self.set_display(float("nan"), False)
        mujoco.mj_forward(m, d)
        mujoco.mj_step(m, d, nstep=int(round(SETTLE_S / m.opt.timestep)))
        d.time = 0.0
        mujoco.mj_forward(m, d)

    def scene_hash(self) -> str:
        """sha256 (16 hex) of the loaded scene as compiled (run.json assets.scene_hash); '' before a load."""
        return self._scene_hash

    def _index_model(self, scene) -> None:
        m = self.model
        self._arm_qadr = np.array([m.joint(n).qposadr[0] for n in ARM_JOINT_NAMES])
        self._arm_dadr = np.array([m.joint(n).dofadr[0] for n in ARM_JOINT_NAMES])
        self._finger_qadr = np.array([m.joint(n).qposadr[0] for n in FINGER_JOINT_NAMES])
        self._finger_dadr = np.array([m.joint(n).dofadr[0] for n in FINGER_JOINT_NAMES])
        self._object_kind = dict(scene.objects)
        self._objects = tuple(scene.objects)
        self._object_body = {n: m.body(n).id for n in self._objects}
        self._fixture_body = {n: m.body(n).id for n in scene.fixtures}
        # Free objects can be placed (set_object_pose); a fixed one (the rotor) is only measured.
        self._object_qadr = {n: m.joint(f"{n}_free").qposadr[0] for n in self._objects
                             if mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, f"{n}_free") >= 0}
        self.has_load_cell = bool(scene.load_cell_site)
        if self.has_load_cell:
            self._pan_force_adr = m.sensor("pan_force").adr[0]
            self._pan_torque_adr = m.sensor("pan_torque").adr[0]
            self._pan_site = m.site(scene.load_cell_site).id
        body_identity = {}
        for b in range(m.nbody):
            name = m.body(b).name
            if name in self._object_body:
                body_identity[b] = name
            elif name in scene.fixtures:
                body_identity[b] = scene.fixtures[name]
            elif name == f"{PANDA_PREFIX}left_finger":
                body_identity[b] = LEFT_FINGER
            elif name == f"{PANDA_PREFIX}right_finger":
                body_identity[b] = RIGHT_FINGER
            elif name.startswith(PANDA_PREFIX):
                body_identity[b] = ROBOT
            else:
                body_identity[b] = TABLE  # world: table top (floor is not collidable)
        self._geom_identity = [body_identity[m.geom_bodyid[g]] for g in range(m.ngeom)]
        self._has_display = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "stability_light") >= 0
        if self._has_display:
            self._seg_geoms = [{s: m.geom(f"seg_{i}_{s}").id for s in dl.SEGMENT_NAMES}
                               for i in range(dl.N_DIGITS)]
            self._light_geom = m.geom("stability_light").id

    def _check_sensing_axis(self) -> None:
        """The pan's sensing axis must oppose gravity (paper 8.2)."""
        d = mujoco.MjData(self.model)
        mujoco.mj_kinematics(self.model, d)
        z_axis = d.site_xmat[self._pan_site].reshape(3, 3)[:, 2]
        g = self.model.opt.gravity
        if float(np.dot(z_axis, -g / np.linalg.norm(g))) < 0.9999:
            raise RuntimeError("pan sensing axis is not aligned against gravity")

    def _measure_empty_pan(self) -> Wrench:
        """Tare measured, not assumed: lift every object far off the pan."""
        m = self.model
        d = mujoco.MjData(m)
        for i, name in enumerate(self._object_qadr):
            d.qpos[self._object_qadr[name]:self._object_qadr[name] + 3] = (10.0 + i, 10.0, 10.0)
        mujoco.mj_forward(m, d)
        return self._wrench_from(d)

    # time ----------------------------------------------------------------------
    @property
    def sim_time(self) -> float:
        return float(self.data.time)

    @property
    def timestep(self) -> float:
        return float(self.model.opt.timestep)

    @property
    def gravity(self) -> float:
        return float(np.linalg.norm(self.model.opt.gravity))

    def step(self, n: int = 1) -> None:
        m, d, g = self.model, self.data, self._gripper
        while n > 0:
            if g.ramp_rate > 0.0:
                # The gripper moves at the commanded speed: ramp its servo
                # target one physics step at a time while it travels.
                c = float(d.ctrl[7])
                delta = g.ramp_goal - c
                c = g.ramp_goal if abs(delta) <= g.ramp_rate else c + math.copysign(g.ramp_rate, delta)
                if c == g.ramp_goal:
                    c, g.ramp_rate = g.final_ctrl, 0.0
                d.ctrl[7] = c
                mujoco.mj_step(m, d)
                n -= 1
            else:
                mujoco.mj_step(m, d, nstep=n)
                n = 0

    # commands ------------------------------------------------------------------
    def set_arm_targets(self, positions, names=ARM_JOINT_NAMES) -> CommandCheck:
        check, ordered = validate_arm_command(names, positions)
        if not check.ok:
            self.hold_arm()
            return check
        self.apply_arm_targets(ordered)
        return check

    def apply_arm_targets(self, ordered: tuple[float, ...]) -> None:
        # lab_sim checks each interpolated target once per physics step, not twice.
        self.data.ctrl[:7] = ordered

    def hold_arm(self) -> None:
        """Servo to where the arm is now (used when a command is rejected)."""
        self.data.ctrl[:7] = self.data.qpos[self._arm_qadr]

    def set_gripper(self, width: float, speed: float = 0.1, force: float = 0.0,
                    epsilon_inner: float = 0.005, epsilon_outer: float = 0.005,
                    grasp: bool = False) -> CommandCheck:
        check = validate_gripper_command(width, speed, force, epsilon_inner, epsilon_outer, grasp)
        if not check.ok:
            return check
        current = self._gripper_width()
        half = width / 2.0
        # Grasp: a servo preloaded past the expected width squeezes with
        # `force` N per finger (the tendon splits its force over two fingers).
        final = half - 2.0 * force / GRIPPER_KP if grasp else half
        lo, hi = GRIPPER_CTRL_RANGE
        self._gripper = _GripperCommand(
            target_width=width, grasp=grasp, force=force if grasp else 0.0,
            epsilon_inner=epsilon_inner, epsilon_outer=epsilon_outer,
            closing=grasp or width < current - 1e-4,
            ramp_goal=min(max(half, lo), hi), ramp_rate=speed / 2.0 * self.timestep,
            final_ctrl=min(max(final, lo), hi))
        return check

    def set_object_pose(self, name: str, position, orientation=(1.0, 0.0, 0.0, 0.0)) -> None:
        m, d = self.model, self.data
        if name not in self._object_qadr:
            raise ValueError(f"unknown object {name!r}")
        qadr = self._object_qadr[name]
        dadr = m.jnt_dofadr[m.joint(f"{name}_free").id]
        quat = np.asarray(orientation, float)
        d.qpos[qadr:qadr + 3] = position
        d.qpos[qadr + 3:qadr + 7] = quat / np.linalg.norm(quat)
        d.qvel[dadr:dadr + 6] = 0.0
        mujoco.mj_forward(m, d)

    # measurements --------------------------------------------------------------
    def _gripper_width(self) -> float:
        return float(np.sum(self.data.qpos[self._finger_qadr]))

    def gripper_state(self) -> GripperState:
        g, w = self._gripper, self._gripper_width()
        grasped = g.grasp and g.target_width - g.epsilon_inner <= w <= g.target_width + g.epsilon_outer
        return GripperState(width=w, target_width=g.target_width, grasp=g.grasp, force=g.force,
                            grasped=bool(grasped))

    def joint_state(self) -> JointState:
        d = self.data
        qadr = np.concatenate([self._arm_qadr, self._finger_qadr])
        dadr = np.concatenate([self._arm_dadr, self._finger_dadr])
        return JointState(names=ARM_JOINT_NAMES + FINGER_JOINT_NAMES,
                          position=tuple(float(x) for x in d.qpos[qadr]),
                          velocity=tuple(float(x) for x in d.qvel[dadr]),
                          effort=tuple(float(x) for x in d.qfrc_actuator[dadr]))

    def _wrench_from(self, d: mujoco.MjData) -> Wrench:
        f = d.sensordata[self._pan_force_adr:self._pan_force_adr + 3]
        t = d.sensordata[self._pan_torque_adr:self._pan_torque_adr + 3]
        return Wrench(force=tuple(float(x) for x in f), torque=tuple(float(x) for x in t))

    def pan_wrench(self) -> Wrench:
        if not self.has_load_cell:
            raise RuntimeError(f"the {self.family.name} scene has no load cell")
        return self._wrench_from(self.data)

    def empty_pan_wrench(self) -> Wrench:
        if not self.has_load_cell:
            raise RuntimeError(f"the {self.family.name} scene has no load cell")
        return self._empty_wrench

    def contacts(self) -> list[tuple[str, str]]:
        """Identity pairs in contact now (touching or penetrating)."""
        d, ident = self.data, self._geom_identity
        if d.ncon == 0:
            return []
        # The contact list's fields as arrays: one wrapper object per contact costs ~10 us.
        contacts = d.contact
        touching = contacts.geom[contacts.dist <= 0.0].tolist()
        return [(ident[a], ident[b]) for a, b in touching]

    def measure(self) -> WorldMeasurement:
        m, d = self.model, self.data
        touching: dict[str, set[str]] = {n: set() for n in (*self._objects, PAN)}
        for a, b in self.contacts():
            if a in touching:
                touching[a].add(b)
            if b in touching:
                touching[b].add(a)
        vel = np.zeros(6)
        objects = {}
        for name in self._objects:
            bid = self._object_body[name]
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, bid, vel, 0)
            objects[name] = ObjectMeasurement(
                name=name, kind=self._object_kind[name],
                position=tuple(float(x) for x in d.xpos[bid]),
                orientation=tuple(float(x) for x in d.xquat[bid]),
                linear_speed=float(np.linalg.norm(vel[3:])),
                angular_speed=float(np.linalg.norm(vel[:3])),
                contacts=tuple(sorted(touching[name])))
        return WorldMeasurement(t=self.sim_time, objects=objects,
                                gripper_width=self._gripper_width(),
                                gripper_closing=self._gripper.closing,
                                pan_contacts=tuple(sorted(touching[PAN])))

    def entity_states(self) -> list[EntityState]:
        """The robot's base, the fixtures and the objects, as a simulator's entity
        interface reports them (simulation_interfaces GetEntitiesStates)."""
        m, d = self.model, self.data
        bodies = [(ROBOT, "robot", m.body(f"{PANDA_PREFIX}link0").id)]
        bodies += [(name, "fixture", bid) for name, bid in self._fixture_body.items()]
        bodies += [(name, "object", bid) for name, bid in self._object_body.items()]
        vel = np.zeros(6)
        states = []
        for name, category, bid in bodies:
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, bid, vel, 0)
            states.append(EntityState(
                name=name, category=category,
                position=tuple(float(x) for x in d.xpos[bid]),
                orientation=tuple(float(x) for x in d.xquat[bid]),
                linear_velocity=tuple(float(x) for x in vel[3:]),
                angular_velocity=tuple(float(x) for x in vel[:3]),
                movable=name in self._object_qadr))
        return states

    def set_object_velocity(self, name: str, linear, angular) -> None:
        """Evaluator-side twist of a free object (world frame), like set_object_pose."""
        m, d = self.model, self.data
        if name not in self._object_qadr:
            raise ValueError(f"unknown object {name!r}")
        dadr = m.jnt_dofadr[m.joint(f"{name}_free").id]
        # A free joint's velocity: linear in the world frame, angular in the body frame.
        rot = d.xmat[self._object_body[name]].reshape(3, 3)
        d.qvel[dadr:dadr + 3] = linear
        d.qvel[dadr + 3:dadr + 6] = rot.T @ np.asarray(angular, float)
        mujoco.mj_forward(m, d)

    # display and cameras -------------------------------------------------------
    def set_display(self, displayed_g: float, stable: bool) -> None:
        self._display = (float(displayed_g), bool(stable))
        if not self._has_display:
            return
        text = dl.display_text(displayed_g)
        rgba = self.model.geom_rgba
        for i, ch in enumerate(text):
            lit = dl.DIGIT_SEGMENTS[ch]
            for s, gid in self._seg_geoms[i].items():
                rgba[gid] = dl.SEG_ON_RGBA if s in lit else dl.SEG_OFF_RGBA
        rgba[self._light_geom] = dl.LIGHT_ON_RGBA if stable else dl.LIGHT_OFF_RGBA

    def _renderer(self, size: tuple[int, int]) -> mujoco.Renderer:
        if size not in self._renderers:
            r = mujoco.Renderer(self.model, height=size[0], width=size[1])
            r.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
            r.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
            r.scene.flags[mujoco.mjtRndFlag.mjRND_SKYBOX] = False
            self._renderers[size] = r
        return self._renderers[size]

    def render(self, camera_name: str) -> np.ndarray:
        cameras = self.cameras
        if camera_name not in cameras:
            raise ValueError(f"unknown camera {camera_name!r}; cameras are {cameras}")
        r = self._renderer(self.render_settings.size(camera_name))
        opt = mujoco.MjvOption()
        if not self.render_settings.visual_meshes:
            opt.geomgroup[2], opt.geomgroup[3] = 0, 1
        r.update_scene(self.data, camera=CAMERA_MODEL_NAMES.get(camera_name, camera_name), scene_option=opt)
        return r.render()

    # checkpoints ---------------------------------------------------------------
    def save_state(self) -> bytes:
        m, d = self.model, self.data
        state = np.empty(mujoco.mj_stateSize(m, STATE_SPEC))
        mujoco.mj_getState(m, d, state, STATE_SPEC)
        header = json.dumps({
            "instance_id": self.instance.instance_id,
            "layout_hash": self.instance.layout_hash,
            "scene_hash": self._scene_hash,
            "gripper": vars(self._gripper),
            "display": list(self._display),
            "nstate": int(state.size),
        }).encode()
        return BLOB_MAGIC + struct.pack("<I", len(header)) + header + state.tobytes()

    def restore_state(self, blob: bytes) -> None:
        if not blob.startswith(BLOB_MAGIC):
            raise ValueError("not a lab_sim checkpoint")
        (hlen,) = struct.unpack_from("<I", blob, len(BLOB_MAGIC))
        start = len(BLOB_MAGIC) + 4
        header = json.loads(blob[start:start + hlen])
        # The compiled scene's hash covers the layout and every physical parameter (masses).
        if (header.get("layout_hash"), header.get("scene_hash")) != (self.instance.layout_hash, self._scene_hash):
            raise ValueError("checkpoint belongs to a different instance; load() it first")
        state = np.frombuffer(blob, dtype=np.float64, offset=start + hlen)
        if state.size != header["nstate"] or state.size != mujoco.mj_stateSize(self.model, STATE_SPEC):
            raise ValueError("checkpoint state size does not match this model")
        mujoco.mj_setState(self.model, self.data, state, STATE_SPEC)
        self._gripper = _GripperCommand(**header["gripper"])
        self.set_display(*header["display"])
        mujoco.mj_forward(self.model, self.data)

    def close(self) -> None:
        for r in self._renderers.values():
            r.close()
        self._renderers = {}
