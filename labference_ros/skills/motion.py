"""Pick-and-place motion on the cell's robot model (differential IK with mink).

The planner turns "move this object from here to there" into a time-stamped
list of 7 arm joint targets at a fixed rate plus Franka-style gripper events;
a scripted controller (or the lab_sim node) replays them. Grasps are top-down
with the fingers closing along world y; object sizes come from the cell
description. No simulator: a real rig plans with the same code.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import mink
import mujoco
import numpy as np

from labference_ros.cell.description import ObjectShape
from labference_ros.mujoco_cell.panda_model import ARM_JOINTS, FINGER_JOINTS, GRIP_SITE, PANDA_PREFIX, panda_spec
from labference_ros.core.safety import PANDA_MAX_ACCELERATION, PANDA_MAX_VELOCITY, SafetyEnvelope

TOP_DOWN = np.diag([1.0, -1.0, -1.0])  # TCP z down, fingers close along world y


TUBE_OPEN_WIDTH_M = 0.05  # the fingers open this wide around a tube (wider than any grasp command)


def tube_open_width(gripper) -> float:
    """The fingers' open width around a tube for a tested system's gripper convention
    (core.action_spec): wider than its grasp threshold (a narrower value would read as a grasp)."""
    return min(gripper.open_width_m, max(TUBE_OPEN_WIDTH_M, gripper.grasp_below_m + 0.002))


class PlanningError(RuntimeError):
    pass


@dataclass(frozen=True)
class GripperEvent:
    t: float  # seconds from plan start
    width: float
    speed: float = 0.1
    force: float = 0.0
    grasp: bool = False
    epsilon_inner: float = 0.005
    epsilon_outer: float = 0.005


@dataclass
class MotionPlan:
    dt: float
    arm_q: np.ndarray  # (N, 7): target at t = i * dt
    gripper_events: list[GripperEvent] = field(default_factory=list)
    labels: list[tuple[float, str]] = field(default_factory=list)  # phase starts

    @property
    def duration(self) -> float:
        return len(self.arm_q) * self.dt

    @property
    def times(self) -> np.ndarray:
        return np.arange(len(self.arm_q)) * self.dt


@dataclass(frozen=True)
class PickPlaceSettings:
    rate_hz: float = 100.0
    max_speed: float = 0.25  # m/s, TCP, peak of the min-jerk profile
    approach_height: float = 0.10  # above the grasp / release pose
    grasp_below_top: float = 0.012  # pad centre below the object's top face
    release_clearance: float = 0.003  # object bottom above the support at release
    open_margin: float = 0.03  # opening beyond the object diameter
    grasp_force: float = 10.0  # N per finger; the stock servo (about 1 N) dropped 100 g
    arrive_settle_s: float = 0.3  # the servos lag the targets by ~0.1 s
    grasp_settle_s: float = 0.5
    release_settle_s: float = 0.5
    max_tcp_error: float = 0.004  # m; IK must reach every waypoint this closely
    # Every move is retimed to stay within this fraction of the Panda's joint velocity
    # and acceleration limits (core.safety), as a real arm's controllers require.
    joint_limit_fraction: float = 0.6


def _min_jerk(s: np.ndarray) -> np.ndarray:
    return 10 * s**3 - 15 * s**4 + 6 * s**5


def robot_model() -> mujoco.MjModel:
    """The same Panda as in the scene, alone, for kinematics."""
    spec = mujoco.MjSpec()
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST  # as the child's
    frame = spec.worldbody.add_frame(pos=[0, 0, 0])
    frame.attach_body(panda_spec().worldbody.first_body(), PANDA_PREFIX, "")
    return spec.compile()


class PickPlacePlanner:
    def __init__(self, settings: PickPlaceSettings | None = None):
        self.settings = settings or PickPlaceSettings()
        self.model = robot_model()
        m = self.model
        self._arm_qadr = np.array([m.joint(n).qposadr[0] for n in ARM_JOINTS])
        self._finger_qadr = np.array([m.joint(n).qposadr[0] for n in FINGER_JOINTS])
        self.configuration = mink.Configuration(m)
        self.tcp_task = mink.FrameTask(GRIP_SITE, "site", position_cost=1.0,
                                       orientation_cost=0.5, lm_damping=1e-3)
        self.posture_task = mink.PostureTask(m, cost=1e-3)
        self.limits = [mink.ConfigurationLimit(m),
                       mink.VelocityLimit(m, {n: 2.0 for n in ARM_JOINTS})]

    # kinematics ----------------------------------------------------------------
    def _set_q(self, arm_q) -> None:
        q = np.zeros(self.model.nq)
        q[self._arm_qadr] = arm_q
        q[self._finger_qadr] = 0.04
        self.configuration.update(q)

    def tcp_pose(self, arm_q) -> tuple[np.ndarray, np.ndarray]:
        self._set_q(arm_q)
        T = self.configuration.get_transform_frame_to_world(GRIP_SITE, "site")
        return T.translation(), T.rotation().as_matrix()

    def _track(self, arm_q, waypoints: np.ndarray, rotation: np.ndarray = TOP_DOWN) -> np.ndarray:
        """Differential IK along a dense TCP path, the hand turning to `rotation` (TCP axes
        as columns) on the way; one row of joints per point."""
        dt = 1.0 / self.settings.rate_hz
        self._set_q(arm_q)
        self.posture_task.set_target(self.configuration.q.copy())
        rotations = self._turn_to(waypoints, rotation)
        out = np.empty((len(waypoints), 7))
        for i, p in enumerate(waypoints):
            self.tcp_task.set_target(mink.SE3.from_rotation_and_translation(rotations[i], p))
            for _ in range(3):  # a few iterations keep the lag below a millimetre
                v = mink.solve_ik(self.configuration, [self.tcp_task, self.posture_task], dt,
                                  solver="daqp", damping=1e-3, limits=self.limits)
                self.configuration.integrate_inplace(v, dt)
            out[i] = self.configuration.q[self._arm_qadr]
        reached = self.configuration.get_transform_frame_to_world(GRIP_SITE, "site")
        err = float(np.linalg.norm(reached.translation() - waypoints[-1]))
        if err > self.settings.max_tcp_error:
            raise PlanningError(f"IK misses the waypoint {waypoints[-1]} by {err * 1000:.1f} mm")
        return out

    def _turn_to(self, waypoints: np.ndarray, rotation: np.ndarray) -> list:
        """The hand's orientation along a move: from where it is now to `rotation`,
        in step with the move's progress (a hand not yet there turns smoothly
        instead of at the first waypoint)."""
        from scipy.spatial.transform import Rotation, Slerp

        now = self.configuration.get_transform_frame_to_world(GRIP_SITE, "site").rotation().as_matrix()
        start = np.asarray(self.configuration.get_transform_frame_to_world(GRIP_SITE, "site").translation())
        ends = Rotation.from_matrix(np.stack([now, rotation]))
        if (ends[0].inv() * ends[1]).magnitude() < 1e-4:
            return [mink.SO3.from_matrix(rotation)] * len(waypoints)
        travel = np.linalg.norm(np.asarray(waypoints) - start, axis=1)
        progress = travel / travel[-1] if travel[-1] > 1e-9 else np.linspace(0.0, 1.0, len(waypoints) + 1)[1:]
        turned = Slerp([0.0, 1.0], ends)(np.clip(progress, 0.0, 1.0)).as_matrix()
        return [mink.SO3.from_matrix(r) for r in turned]

    def retime(self, start_q: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The move's rows unchanged when they keep joint_limit_fraction of the Panda's
        velocity and acceleration limits (from rest to rest); otherwise the same
        joint path from start_q through rows, timed by a min-jerk profile along the
        path slow enough for them (the IK can ask for more than the TCP's speed
        suggests near a singular posture). Rows at the planner's rate, ending on rows[-1]."""
        frac = self.settings.joint_limit_fraction
        vmax = np.asarray(PANDA_MAX_VELOCITY) * frac
        amax = np.asarray(PANDA_MAX_ACCELERATION) * frac
        dt = 1.0 / self.settings.rate_hz
        path = np.vstack([np.asarray(start_q, float)[None, :], rows])

        def within(out: np.ndarray, fraction: float) -> bool:
            """From rest at start_q to rest at out[-1] (the last row repeated), inside
            `fraction` of the limits (core.safety's check, the workspace left open)."""
            limits = SafetyEnvelope(workspace_min=(-np.inf,) * 3, workspace_max=(np.inf,) * 3,
                                    max_velocity=tuple(np.asarray(PANDA_MAX_VELOCITY) * fraction),
                                    max_acceleration=tuple(np.asarray(PANDA_MAX_ACCELERATION) * fraction))
            return not limits.violations(np.vstack([out, out[-1:]]), path[0], None, dt,
                                         lambda arm: np.zeros((len(arm), 3)))

        if within(rows, frac):
            return rows  # the move as tracked already keeps the margin
        # Path parameter: seconds the slowest joint needs at its speed limit.
        s = np.concatenate([[0.0], np.cumsum(np.max(np.abs(np.diff(path, axis=0)) / vmax, axis=1))])
        length = float(s[-1])
        if length <= 0.0:
            return rows
        duration = max(len(rows) * dt, 1.875 * length, float(np.sqrt(5.774 * length * np.max(vmax / amax))))
        while True:
            n = max(1, int(np.ceil(duration / dt)))
            u = _min_jerk(np.arange(1, n + 1) / n) * length
            out = np.column_stack([np.interp(u, s, path[:, j]) for j in range(path.shape[1])])
            if within(out, 1.0):
                return out
            duration *= 1.25  # path corners: the profile alone did not bound them

    def _segment(self, start: np.ndarray, goal: np.ndarray) -> np.ndarray:
        s = self.settings
        dist = float(np.linalg.norm(goal - start))
        duration = max(0.4, 1.875 * dist / s.max_speed)
        n = max(2, int(np.ceil(duration * s.rate_hz)))
        u = _min_jerk(np.linspace(0.0, 1.0, n + 1)[1:])
        return start + np.outer(u, goal - start)

    # planning ------------------------------------------------------------------
    def plan_tcp_moves(self, arm_q, waypoints, hold_s: float = 0.0) -> MotionPlan:
        """Straight top-down TCP moves through the given points, then a hold."""
        dt = 1.0 / self.settings.rate_hz
        q = np.asarray(arm_q, float)
        p, _ = self.tcp_pose(q)
        rows = []
        for goal in waypoints:
            goal = np.asarray(goal, float)
            rows.append(self.retime(q, self._track(q, self._segment(p, goal))))
            q, p = rows[-1][-1], goal
        rows.append(np.repeat(q[None, :], int(round(hold_s * self.settings.rate_hz)), axis=0))
        return MotionPlan(dt=dt, arm_q=np.concatenate(rows))

    def plan_pick_place(self, arm_q, shape: ObjectShape, object_xyz, dest_xy,
                        dest_surface_z: float) -> MotionPlan:
        """Pick the object of this shape (its cell's ObjectShape) whose body centre is at
        object_xyz and set it down standing at dest_xy on a surface at height dest_surface_z."""
        return self.plan_pick_set_down(arm_q, object_xyz, shape.radius, shape.height, dest_xy, dest_surface_z)

    def plan_pick_set_down(self, arm_q, object_xyz, radius: float, length: float, dest_xy,
                           dest_surface_z: float, open_width: float | None = None) -> MotionPlan:
        """Pick an upright cylinder whose body centre is at object_xyz, top-down (wherever it
        stands: on the table or in a holder), and set it down standing at dest_xy on a surface
        at dest_surface_z. open_width: the fingers' open width (default: the diameter and the
        open margin)."""
        s = self.settings
        obj = np.asarray(object_xyz, float)
        grasp = np.array([obj[0], obj[1], obj[2] + length / 2 - s.grasp_below_top])
        place = np.array([dest_xy[0], dest_xy[1], dest_surface_z + s.release_clearance + length - s.grasp_below_top])
        travel_z = max(grasp[2], place[2]) + s.approach_height
        above_grasp = np.array([grasp[0], grasp[1], travel_z])
        above_place = np.array([place[0], place[1], travel_z])
        open_w = min(0.08, 2 * radius + s.open_margin) if open_width is None else open_width
        plan = _PlanBuilder(self, arm_q)
        plan.pick(above_grasp, grasp, open_w, 2 * radius)
        plan.move(above_place, "transfer")
        plan.move(place, "lower")
        plan.release(open_w)
        plan.move(above_place, "retreat")
        return plan.done()

    def plan_pick_insert(self, arm_q, object_xyz, radius: float, length: float, mouth, axis,
                         clear_z: float, release_depth: float = 0.02, pre_insert: float = 0.04,
                         open_width: float | None = None, detour=None, abandon_at=None,
                         abandon_axis=None) -> MotionPlan:
        """Pick an upright cylinder (a tube) whose body centre is at object_xyz, top-down,
        and insert it bottom first into a socket: its mouth, and `axis` the unit direction
        into it. The hand turns so that the cylinder's axis lies along the socket's, the
        fingers closing across the plane of the tilt; the bottom goes `pre_insert` above
        the mouth along the axis, then in to `release_depth` past it, where the fingers
        open (the cylinder slides on to the seat). `clear_z`: the height the cylinder's
        bottom keeps while it travels; `open_width`: the fingers' open width (default: the
        cylinder's diameter and the open margin).

        Imperfect reference systems (paper 5.3's failed attempts) use two variations:
        `detour` = (mouth, axis) of another socket, approached first (the cylinder's bottom
        descends along its axis to DETOUR_STOP_M above its mouth) and left again before the
        insertion; `abandon_at` = a point (x, y, surface z): after the cylinder's bottom has
        descended toward the mouth it is carried there instead and let go
        ABANDON_HEIGHT_M above that surface (a drop after a correct choice), upright, or
        along `abandon_axis` (unit, bottom first) when given."""
        s = self.settings
        obj = np.asarray(object_xyz, float)
        mouth, axis = np.asarray(mouth, float), np.asarray(axis, float) / np.linalg.norm(axis)
        below_top = s.grasp_below_top
        grasp = np.array([obj[0], obj[1], obj[2] + length / 2 - below_top])
        reach = length - below_top  # grip point to the cylinder's bottom, along its axis
        travel_z = max(clear_z + reach, grasp[2] + s.approach_height)
        above_grasp = np.array([grasp[0], grasp[1], travel_z])
        pre = mouth - axis * (reach + pre_insert)
        inserted = mouth + axis * (release_depth - reach)
        above_pre = np.array([pre[0], pre[1], max(travel_z, pre[2])])
        tilted = socket_rotation(axis)
        open_w = min(0.08, 2 * radius + s.open_margin) if open_width is None else open_width
        plan = _PlanBuilder(self, arm_q)
        plan.pick(above_grasp, grasp, open_w, 2 * radius)
        if detour is not None:
            d_mouth = np.asarray(detour[0], float)
            d_axis = np.asarray(detour[1], float) / np.linalg.norm(detour[1])
            d_tilted = socket_rotation(d_axis)
            d_pre = d_mouth - d_axis * (reach + pre_insert)
            d_above = np.array([d_pre[0], d_pre[1], max(travel_z, d_pre[2])])
            plan.move(d_above, "detour", d_tilted)
            plan.move(d_pre, "detour_align", d_tilted)
            plan.move(d_mouth - d_axis * (reach + DETOUR_STOP_M), "detour_descend", d_tilted)
            plan.move(d_above, "detour_retreat", d_tilted)
        plan.move(above_pre, "transfer", tilted)
        plan.move(pre, "align", tilted)
        if abandon_at is not None:
            plan.move(mouth - axis * (reach + DETOUR_STOP_M), "descend", tilted)
            plan.move(above_pre, "abandon_lift", tilted)
            spot = np.asarray(abandon_at, float)
            down = np.array([0.0, 0.0, -1.0]) if abandon_axis is None else np.asarray(abandon_axis, float)
            down = down / np.linalg.norm(down)
            held = TOP_DOWN if abandon_axis is None else socket_rotation(down)
            # The grip point: `reach` up the cylinder from its bottom, ABANDON_HEIGHT_M above the spot.
            over = spot + np.array([0.0, 0.0, ABANDON_HEIGHT_M]) - down * reach
            plan.move(np.array([over[0], over[1], travel_z]), "abandon_carry", held)
            plan.move(over, "abandon_lower", held)
            plan.release(open_w)
            plan.move(np.array([over[0], over[1], travel_z]), "retreat", held)
            return plan.done()
        plan.move(inserted, "insert", tilted)
        plan.release(open_w)
        plan.move(pre, "withdraw", tilted)
        plan.move(above_pre, "retreat", tilted)
        return plan.done()


# plan_pick_insert's variations: how far above the other socket's mouth a detour's
# descent stops, and how high above the surface an abandoned cylinder's bottom is let go.
DETOUR_STOP_M = 0.01
ABANDON_HEIGHT_M = 0.01


class _PlanBuilder:
    """A motion plan assembled move by move from the arm's start: rows at the planner's
    rate, gripper events and phase labels at their times."""

    def __init__(self, planner: PickPlacePlanner, arm_q):
        self.planner, self.settings = planner, planner.settings
        self.dt = 1.0 / self.settings.rate_hz
        self.q = np.asarray(arm_q, float)
        self.tcp, _ = planner.tcp_pose(arm_q)
        self.rows: list[np.ndarray] = []
        self.events: list[GripperEvent] = []
        self.labels: list[tuple[float, str]] = []

    def now(self) -> float:
        return sum(len(r) for r in self.rows) * self.dt

    def move(self, goal, label: str, rotation: np.ndarray = TOP_DOWN) -> None:
        """A straight TCP move from the last goal, the hand turning to `rotation`."""
        p = self.planner
        self.labels.append((self.now(), label))
        self.rows.append(p.retime(self.q, p._track(self.q, p._segment(self.tcp, goal), rotation)))
        self.q, self.tcp = self.rows[-1][-1], goal

    def hold(self, seconds: float, label: str) -> None:
        self.labels.append((self.now(), label))
        self.rows.append(np.repeat(self.q[None, :], int(round(seconds * self.settings.rate_hz)), axis=0))

    def pick(self, above, grasp, open_width: float, diameter: float) -> None:
        """Open, come down on the object top-down, grasp it and lift it back to `above`."""
        s = self.settings
        self.events.append(GripperEvent(0.0, open_width))
        self.move(above, "approach")
        self.move(grasp, "descend")
        self.hold(s.arrive_settle_s, "settle")
        self.events.append(GripperEvent(self.now(), diameter, force=s.grasp_force, grasp=True))
        self.hold(s.grasp_settle_s, "grasp")
        self.move(above, "lift")

    def release(self, open_width: float) -> None:
        """Settle where the last move arrived and open the fingers."""
        s = self.settings
        self.hold(s.arrive_settle_s, "settle")
        self.events.append(GripperEvent(self.now(), open_width))
        self.hold(s.release_settle_s, "release")

    def done(self) -> MotionPlan:
        return MotionPlan(dt=self.dt, arm_q=np.concatenate(self.rows), gripper_events=self.events, labels=self.labels)


def socket_rotation(axis) -> np.ndarray:
    """TCP axes (columns) holding a top-down-grasped cylinder along `axis` (unit, into a
    socket): TCP z along the axis, the fingers (TCP y) closing horizontally across the
    tilt, turned the least from the top-down grasp."""
    z = np.asarray(axis, float) / np.linalg.norm(axis)
    y = np.cross(z, [0.0, 0.0, 1.0])
    if np.linalg.norm(y) < 1e-6:  # a vertical socket: as picked
        return TOP_DOWN.copy()
    y /= np.linalg.norm(y)
    if y @ TOP_DOWN[:, 1] < 0:
        y = -y
    return np.column_stack([np.cross(y, z), y, z])


def execute_plan(backend, plan: MotionPlan, start: int = 0, stop: int | None = None) -> None:
    """Replay ticks [start, stop) of a plan open-loop: one arm target per
    tick, gripper events at their times, plan.dt of sim time per tick.
    ``backend``: anything with set_gripper, set_arm_targets and advance (a
    simulator backend, or a driver of a real arm)."""
    stop = len(plan.arm_q) if stop is None else stop
    events = sorted(plan.gripper_events, key=lambda e: e.t)
    k = 0
    while k < len(events) and events[k].t < start * plan.dt - 1e-9:
        k += 1  # already applied before `start`
    for i in range(start, stop):
        t = i * plan.dt
        while k < len(events) and events[k].t <= t + 1e-9:
            e = events[k]
            backend.set_gripper(e.width, e.speed, e.force, e.epsilon_inner, e.epsilon_outer, e.grasp)
            k += 1
        check = backend.set_arm_targets(plan.arm_q[i])
        if not check.ok:
            raise PlanningError(f"plan produced a rejected arm target: {check.reason}")
        backend.advance(plan.dt)
