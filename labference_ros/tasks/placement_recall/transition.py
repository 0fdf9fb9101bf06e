"""The occluded environment transition (paper 8.3, eq. 10) on a simulated scene.

After stable placement, safe retraction and camera occlusion (the caller's part:
the robot is away and the cameras deliver nothing useful), each tube's measured
transform relative to the rack is saved, the empty rack is moved to its new
pose, and every tube is rebuilt at T'_world,tube = T'_world,rack T_rack,tube
with zero velocity; the physics then runs until every tube is still. Policy
actions and recognition pause for the whole interval (the caller's part too:
the transition runs between two control steps and delivers no measurement).

Only the tubes inside the rack's footprint move with it: a tube on the table or
in the gripper stays where it is. Deterministic: the same state and the same new
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
STILL_HOLD_S = 0.2  # ... for this long counts as stable
MAX_SETTLE_S = 2.0


@dataclass
class TransitionRecord:
    """What the transition did, for the episode's validity record."""

    rack_before: list[float]  # x, y, z, yaw
    rack_after: list[float]
    moved: dict[str, dict] = field(default_factory=dict)  # tube -> {relative_before, relative_after, errors}
    settle_s: float = 0.0
    stable: bool = False

    def max_position_error_m(self) -> float:
        return max((m["position_error_m"] for m in self.moved.values()), default=0.0)

    def max_rotation_error_deg(self) -> float:
        return max((m["rotation_error_deg"] for m in self.moved.values()), default=0.0)


def _body_matrix(data: mujoco.MjData, body_id: int) -> np.ndarray:
    return pose_matrix(data.xpos[body_id], data.xquat[body_id])


def _free_joint_address(model: mujoco.MjModel, body_id: int) -> tuple[int, int]:
    joint = model.body_jntadr[body_id]
    if joint < 0 or model.jnt_type[joint] != mujoco.mjtJoint.mjJNT_FREE:
        raise ValueError(f"body {model.body(body_id).name!r} is not a free body")
    return int(model.jnt_qposadr[joint]), int(model.jnt_dofadr[joint])


def _in_rack(position, pose: RackPose, geometry: RackGeometry) -> bool:
    local = to_local(position, pose)
    half_x, half_y = geometry.half_size
    return abs(local[0]) <= half_x and abs(local[1]) <= half_y and -geometry.depth_m - 0.01 <= local[2] <= 0.12


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
        if _in_rack(data.xpos[body], pose_before, geometry):
            inside[name] = (body, relative(t_rack, _body_matrix(data, body)))

    t_rack_new = new_pose.matrix()
    data.mocap_pos[mocap] = new_pose.center
    data.mocap_quat[mocap] = quat_of(t_rack_new)
    for name, (body, t_rack_tube) in inside.items():
        qpos, dof = _free_joint_address(model, body)
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
        speeds = [float(np.linalg.norm(data.qvel[_free_joint_address(model, b)[1]:][:3])) for b, _ in inside.values()]
        if all(s < STILL_SPEED_M_S for s in speeds):
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
