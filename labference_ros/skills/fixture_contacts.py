"""Contact of the arm and hand with the cell's fixtures, at arm configurations and on
the motion between them: MuJoCo's collision detection on the episode's own scene
(the family's, built from the cell description and the instance's layout), posed by
forward kinematics only, no physics.

Fixtures are everything the robot may not touch: the table, the balance, the
cameras and their mounts (add_camera_mounts), the rotor, the rack (geoms fixed in
the world, and bodies on hinges or slides such as a rotor or a pan). The movable
objects (free bodies: standards, tubes) are what the hand is there to touch, and
the robot's base stands on the table: neither counts."""
from __future__ import annotations

import mujoco
import numpy as np

from labference_ros.mujoco_cell.panda_model import ARM_JOINTS, FINGER_JOINTS, PANDA_PREFIX

# The motion between two rows is checked at configurations no joint of which is
# further than this from the last one checked (about 8 mm at the hand, 0.85 m out).
MAX_JOINT_STEP_RAD = 0.01
# Touching within MuJoCo's collision tolerance is not a collision.
PENETRATION_TOLERANCE_M = 0.001
ARM_COLUMNS = 7
FINGER_MAX = 0.04  # m, one finger's travel (the Franka Hand opens 80 mm)
# A camera's body as a keep-out box, and the post that holds a camera on a fixture (the
# display camera over the balance's readout): the scenes model neither, the arm must
# still not hit them.
CAMERA_HALF_SIZE_M = 0.025
CAMERA_POST_RADIUS_M = 0.01


def add_camera_mounts(spec: mujoco.MjSpec) -> mujoco.MjSpec:
    """Keep-out geoms for the cameras that are not on the robot: each camera's body, and
    for one mounted on a fixture a post from the fixture's frame to it. For the contact
    check only (the simulated scene stays as it is): a world camera's stand is not known."""
    for body in spec.bodies:
        if PANDA_PREFIX and (body.name or "").startswith(PANDA_PREFIX):
            continue  # the wrist camera moves with the hand
        for camera in body.cameras:
            at = [float(v) for v in camera.pos]
            body.add_geom(name=f"{camera.name}_camera_body", type=mujoco.mjtGeom.mjGEOM_BOX,
                          size=[CAMERA_HALF_SIZE_M] * 3, pos=at)
            if body.name not in ("", "world") and np.linalg.norm(at) > CAMERA_HALF_SIZE_M:
                body.add_geom(name=f"{camera.name}_camera_post", type=mujoco.mjtGeom.mjGEOM_CAPSULE,
                              size=[CAMERA_POST_RADIUS_M, 0.0, 0.0], fromto=[0.0, 0.0, 0.0, *at])
    return spec


def fixture_scene(family, instance) -> mujoco.MjModel:
    """The episode's scene (the family's, for this instance's layout and binding) with its
    camera mounts, compiled for the contact check."""
    return add_camera_mounts(family.build_scene(instance).spec).compile()


def _root_joint_types(model: mujoco.MjModel) -> dict[int, set[int]]:
    """Body id -> the types of the joints on it and on its ancestors (world excluded)."""
    kinds: dict[int, set[int]] = {0: set()}
    for body in range(1, model.nbody):
        own = {int(model.jnt_type[j]) for j in range(model.body_jntadr[body],
                                                      model.body_jntadr[body] + model.body_jntnum[body])}
        kinds[body] = kinds[int(model.body_parentid[body])] | own
    return kinds


class FixtureContacts:
    """Which fixtures the arm and hand touch at given joint rows, in one compiled scene
    (the check's own: every fixture geom is made to collide in it, whatever the
    simulation's flags, as the real display panel is hardware too)."""

    def __init__(self, model: mujoco.MjModel):
        self.model = model
        self._arm_qadr = np.array([model.joint(n).qposadr[0] for n in ARM_JOINTS])
        self._finger_qadr = np.array([model.joint(n).qposadr[0] for n in FINGER_JOINTS])
        base = model.body(f"{PANDA_PREFIX}link0").id
        robot = {b for b in range(model.nbody) if self._descends(b, base)}
        kinds = _root_joint_types(model)
        free = {b for b, k in kinds.items() if int(mujoco.mjtJoint.mjJNT_FREE) in k}
        bodies = model.geom_bodyid
        self.robot_geoms = frozenset(g for g in range(model.ngeom) if bodies[g] in robot and bodies[g] != base
                                     and (model.geom_contype[g] or model.geom_conaffinity[g]))
        self.fixture_geoms = frozenset(g for g in range(model.ngeom) if bodies[g] not in robot
                                       and bodies[g] not in free and model.geom_type[g] != mujoco.mjtGeom.mjGEOM_PLANE)
        for g in self.fixture_geoms:
            model.geom_contype[g], model.geom_conaffinity[g] = 1, 1
        self.data = mujoco.MjData(model)
        # Fixtures on hinges or slides (a rotor, a pan) stay at the scene's initial pose.
        mujoco.mj_forward(model, self.data)

    def _descends(self, body: int, ancestor: int) -> bool:
        while body > 0:
            if body == ancestor:
                return True
            body = int(self.model.body_parentid[body])
        return False

    def _name(self, geom: int) -> str:
        name = mujoco.mj_id2name(self.model, mujoco.mjtObj.mjOBJ_GEOM, geom)
        body = mujoco.mj_id2name(self.model, mujoco.mjtObj.mjOBJ_BODY, int(self.model.geom_bodyid[geom]))
        label = name or body or f"geom {geom}"
        return label[len(PANDA_PREFIX):] if PANDA_PREFIX and label.startswith(PANDA_PREFIX) else label

    def contacts(self, row) -> dict[tuple[int, int], float]:
        """(robot geom, fixture geom) -> penetration in m, for the pairs deeper than the
        tolerance at one row: 7 arm joints, then the gripper width (m; without one, open)."""
        row = np.asarray(row, float)
        self.data.qpos[self._arm_qadr] = row[:ARM_COLUMNS]
        width = row[ARM_COLUMNS] if len(row) > ARM_COLUMNS else 2 * FINGER_MAX
        self.data.qpos[self._finger_qadr] = np.clip(width / 2.0, 0.0, FINGER_MAX)
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_collision(self.model, self.data)
        found: dict[tuple[int, int], float] = {}
        for contact in self.data.contact[:self.data.ncon]:
            g1, g2 = int(contact.geom1), int(contact.geom2)
            if g1 in self.fixture_geoms:
                g1, g2 = g2, g1
            if g1 not in self.robot_geoms or g2 not in self.fixture_geoms:
                continue
            depth = -float(contact.dist)
            if depth > PENETRATION_TOLERANCE_M:
                found[(g1, g2)] = max(depth, found.get((g1, g2), 0.0))
        return found

    def touching(self, row, allowed: dict | None = None) -> tuple[str, str, float] | None:
        """(robot part, fixture, penetration in m) of the deepest contact at one row, or None.
        ``allowed``: contacts already there (pair -> depth) that may stay or get shallower."""
        allowed = allowed or {}
        deepest = None
        for pair, depth in self.contacts(row).items():
            if depth <= allowed.get(pair, 0.0) + PENETRATION_TOLERANCE_M:
                continue  # no deeper than where the motion starts: backing out is allowed
            if deepest is None or depth > deepest[2]:
                deepest = (self._name(pair[0]), self._name(pair[1]), depth)
        return deepest

    def first_contact(self, rows: np.ndarray, start=None) -> str:
        """Why the rows, or the motion to and between them from `start` (a row, None: the
        first row), touch a fixture: the first contact found; "" when none does. A contact
        the start already has (a setpoint measured in contact, a handoff) is not one, unless
        the motion goes deeper into it. The fingers are taken no closer than at the start:
        closing on an object, they stop at it whatever width the row asks."""
        rows = np.atleast_2d(np.array(rows, float))
        previous, allowed = None, {}
        if start is not None:  # the arm's setpoint; the gripper, where it lacks one, as the first row's
            previous = rows[0].copy()
            start = np.asarray(start, float)[:rows.shape[1]]
            previous[:len(start)] = start
            allowed = self.contacts(previous)
            if rows.shape[1] > ARM_COLUMNS:
                rows[:, ARM_COLUMNS] = np.maximum(rows[:, ARM_COLUMNS], previous[ARM_COLUMNS])
        for index, row in enumerate(rows):
            for q in _between(previous, row):
                hit = self.touching(q, allowed)
                if hit is not None:
                    part, fixture, depth = hit
                    where = f"row {index}" if q is row else f"the motion to row {index}"
                    return f"{part} touches the fixture {fixture} ({depth * 1000:.1f} mm deep) at {where}"
            previous = row
        return ""


def _between(previous, row):
    """Configurations on the straight joint-space path from previous (excluded) to row
    (included, as the same object), at most MAX_JOINT_STEP_RAD apart."""
    if previous is not None:
        steps = int(np.ceil(np.max(np.abs(row[:ARM_COLUMNS] - previous[:ARM_COLUMNS])) / MAX_JOINT_STEP_RAD))
        for k in range(1, steps):
            yield previous + (row - previous) * (k / steps)
    yield row
