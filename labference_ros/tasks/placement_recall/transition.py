"""The occluded environment transition (paper 8.3, eq. 10) on a simulated scene.

After stable placement, safe retraction and camera occlusion (the caller's part:
the robot is away and the cameras deliver nothing useful), each tube's measured
transform relative to the rack is saved, the empty rack is moved to its new
pose, and every tube is rebuilt at T'_world,tube = T'_world,rack T_rack,tube
with zero velocity; the physics then runs until every tube is still. Policy
actions and recognition pause for the whole interval (the caller's part too:
the transition runs between two control steps and delivers no measurement).

Only the tubes standing in the rack move with it: a tube on the table or held
above the rack stays where it is. The record says whether the transition is
valid (settled, every relative pose kept within 1 mm and 1 degree). Deterministic: the same state and the same new
pose give the same state after it, bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np

from labference_ros.tasks.placement_recall.rack import (
    RackGeometry,
    RackPose,
    pose_matrix,
    quat_of,
    rebuilt,
    relative,
    rotation_error_deg,
    to_local,
)
from labference_ros.tasks.placement_recall.scene import RACK, RACK_BODY

STILL_SPEED_M_S = 2e-3  # every tube slower than this ...
STILL_SPIN_RAD_S = 0.05  # ... turning slower than this ...
STILL_HOLD_S = 0.2  # ... for this long counts as stable
MAX_SETTLE_S = 2.0
# A transition is valid when every rebuilt tube kept its pose relative to the rack this well
# once settled (else the episode's record says why it is not).
MAX_POSITION_ERROR_M = 0.001
MAX_ROTATION_ERROR_DEG = 1.0


@dataclass
class TransitionRecord:
    """What the transition did, for the episode's validity record."""

    rack_before: list[float]  # x, y, z, yaw
    rack_after: list[float]
    moved: dict[str, dict] = field(default_factory=dict)  # tube -> {relative_before, relative_after, errors}
    settle_s: float = 0.0
    stable: bool = False

    @property
    def valid(self) -> bool:
        """Settled, with every tube's pose relative to the rack kept within tolerance."""
        return self.stable and self.max_position_error_m() <= MAX_POSITION_ERROR_M \
            and self.max_rotation_error_deg() <= MAX_ROTATION_ERROR_DEG

    def max_position_error_m(self) -> float:
        return max((m["position_error_m"] for m in self.moved.values()), default=0.0)

    def max_rotation_error_deg(self) -> float:
        return max((m["rotation_error_deg"] for m in self.moved.values()), default=0.0)


def _body_matrix(data: mujoco.MjData, body_id: int) -> np.ndarray:
    return pose_matrix(data.xpos[body_id], data.xquat[body_id])


def free_joint_address(model: mujoco.MjModel, body_id: int) -> tuple[int, int]:
    joint = model.body_jntadr[body_id]
    if joint < 0 or model.jnt_type[joint] != mujoco.mjtJoint.mjJNT_FREE:
        raise ValueError(f"body {model.body(body_id).name!r} is not a free body")
    return int(model.jnt_qposadr[joint]), int(model.jnt_dofadr[joint])


def _in_rack(position, pose: RackPose, geometry: RackGeometry, tube_half_length_m: float) -> bool:
    """A tube whose centre is over the rack's footprint, low enough that its bottom is in
    a hole (a tube held above the rack is not rebuilt: it goes where the hand goes)."""
    local = to_local(position, pose)
    half_x, half_y = geometry.half_size
    return abs(local[0]) <= half_x and abs(local[1]) <= half_y and local[2] <= tube_half_length_m + 0.002


def occluded_transition(model: mujoco.MjModel, data: mujoco.MjData, tubes, new_pose: RackPose,
                        geometry: RackGeometry = RACK, max_settle_s: float = MAX_SETTLE_S) -> TransitionRecord:
    """Move the rack (mocap body RACK_BODY) to new_pose, rebuilding the tubes in it by eq. 10."""
    rack_id = model.body(RACK_BODY).id
    mocap = int(model.body_mocapid[rack_id])
    yaw_before = float(2 * np.arctan2(data.mocap_quat[mocap][3], data.mocap_quat[mocap][0]))
    pose_before = RackPose(tuple(float(c) for c in data.mocap_pos[mocap]), yaw_before)
    t_rack = pose_before.matrix()
    inside = {}
    for name in tubes:
        body = model.body(name).id
        half_length = float(model.geom_size[model.body_geomadr[body]][1])  # the tube's cylinder
        if _in_rack(data.xpos[body], pose_before, geometry, half_length):
            inside[name] = (body, relative(t_rack, _body_matrix(data, body)))

    t_rack_new = new_pose.matrix()
    data.mocap_pos[mocap] = new_pose.center
    data.mocap_quat[mocap] = quat_of(t_rack_new)
    for name, (body, t_rack_tube) in inside.items():
        qpos, dof = free_joint_address(model, body)
        t_new = rebuilt(t_rack_new, t_rack_tube)
        data.qpos[qpos:qpos + 3] = t_new[:3, 3]
        data.qpos[qpos + 3:qpos + 7] = quat_of(t_new)
        data.qvel[dof:dof + 6] = 0.0
    mujoco.mj_forward(model, data)

    record = TransitionRecord(rack_before=[*pose_before.center, yaw_before],
                              rack_after=[*new_pose.center, new_pose.yaw_rad])
    still_since, t0 = None, float(data.time)
    while data.time - t0 < max_settle_s:
        mujoco.mj_step(model, data)
        velocities = [data.qvel[free_joint_address(model, b)[1]:][:6] for b, _ in inside.values()]
        if all(np.linalg.norm(v[:3]) < STILL_SPEED_M_S and np.linalg.norm(v[3:]) < STILL_SPIN_RAD_S
               for v in velocities):
            still_since = data.time if still_since is None else still_since
            if data.time - still_since >= STILL_HOLD_S:
                record.stable = True
                break
        else:
            still_since = None
    record.settle_s = round(float(data.time - t0), 6)
    for name, (body, before) in inside.items():
        after = relative(t_rack_new, _body_matrix(data, body))
        record.moved[name] = {"relative_before": before.round(9).tolist(), "relative_after": after.round(9).tolist(),
                              "position_error_m": float(np.linalg.norm(after[:3, 3] - before[:3, 3])),
                              "rotation_error_deg": rotation_error_deg(before, after)}
    return record
