"""End-effector delta actions (LIBERO- and SimplerEnv-style checkpoints) ->
the reference interface (absolute joint targets and a gripper width).

A row is [dx, dy, dz, rx, ry, rz, g]: a translation and a rotation of the
hand per control step, normalised (x translation_scale_m, x rotation_scale_rad;
LIBERO's OSC controller: 0.05 m and 0.5 rad at 1) with the rotation as an
axis-angle vector, and a gripper command g in -1..1 (+1 closes, LIBERO's
sign). `frame` says where the deltas are expressed: "base" (the robot base
frame; the rotation is applied on the left, as robosuite's OSC does) or
"tool" (the hand's own frame, on the right). Each step's target pose is the
previous target moved by the row, starting from the measured hand pose, and
becomes joints through the cell's robot model and the skills' IK (the
`kinematics` object: pose(q) and solve(q, position, rotation)), then the
bridge interpolates the step targets to its own control period
(core.action_conversion.resample_steps). A pose the IK misses by more than
max_ik_error_m rejects the chunk with the reason; conventions this cannot
express (another rotation format or frame) are refused when the profile is
built. Pure: numpy and the injected kinematics.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from labference_ros.core.action_conversion import ConversionError, resample_steps
from labference_ros.core.action_spec import ActionSpec, ChunkVerdict, GripperConvention, validate_chunk

EE_FRAMES = ("base", "tool")
ROTATION_FORMATS = ("axis_angle",)
GRIPPER_SIGN_CLOSED_POSITIVE = "sign_closed_positive"  # -1 open, +1 closed (LIBERO)
MAX_IK_ERROR_M = 0.005


def rotation_from_axis_angle(v) -> np.ndarray:
    """Rodrigues: an axis-angle vector (rad) -> a rotation matrix."""
    v = np.asarray(v, dtype=np.float64)
    angle = float(np.linalg.norm(v))
    if angle < 1e-12:
        return np.eye(3)
    k = v / angle
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def axis_angle_from_rotation(R) -> np.ndarray:
    """A rotation matrix -> its axis-angle vector (rad)."""
    R = np.asarray(R, dtype=np.float64)
    angle = float(np.arccos(np.clip((np.trace(R) - 1.0) / 2.0, -1.0, 1.0)))
    if angle < 1e-9:
        return np.zeros(3)
    if np.pi - angle < 1e-6:  # 180 degrees: the axis from the symmetric part
        axis = np.sqrt(np.maximum((np.diag(R) + 1.0) / 2.0, 0.0))
        i = int(np.argmax(axis))
        axis[np.arange(3) != i] *= np.sign(R[i, np.arange(3) != i] + 1e-300)
        return axis / np.linalg.norm(axis) * angle
    w = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]) / (2.0 * np.sin(angle))
    return w * angle


def ee_delta_spec(reference: ActionSpec, control_rate_hz: float) -> ActionSpec:
    names = ("ee_dx", "ee_dy", "ee_dz", "ee_rx", "ee_ry", "ee_rz", "gripper_command")
    return ActionSpec(
        name="ee_delta_axis_angle_sign_gripper", representation="end_effector", dim=7, mode="incremental",
        frame="ee_delta", units=("normalised",) * 6 + ("1 (+1 = closed)",), dimension_names=names,
        lower=(-1.0,) * 7, upper=(1.0,) * 7, limit_handling=("clip",) * 7,
        gripper=dataclasses.replace(reference.gripper, kind=GRIPPER_SIGN_CLOSED_POSITIVE), gripper_index=6,
        control_frequency_hz=float(control_rate_hz), max_chunk_length=reference.max_chunk_length)


@dataclass(frozen=True, eq=False)
class EndEffectorDeltaConversion:
    native: ActionSpec
    reference: ActionSpec
    kinematics: object
    frame: str = "base"
    rotation: str = "axis_angle"
    translation_scale_m: float = 0.05
    rotation_scale_rad: float = 0.5
    open_loop_horizon: int = 0
    max_ik_error_m: float = MAX_IK_ERROR_M
    arm = "ee_delta"
    gripper_threshold = None

    def __post_init__(self) -> None:
        if self.frame not in EE_FRAMES:
            raise ConversionError(f"end-effector frame {self.frame!r} cannot be mapped; supported: {EE_FRAMES}")
        if self.rotation not in ROTATION_FORMATS:
            raise ConversionError(f"rotation format {self.rotation!r} cannot be mapped; supported: {ROTATION_FORMATS}")
        if self.native.control_frequency_hz > self.reference.control_frequency_hz + 1e-9:
            raise ConversionError("the native control rate exceeds the bridge's")
        if not (self.translation_scale_m > 0 and self.rotation_scale_rad > 0):
            raise ConversionError("translation and rotation scales must be positive")

    identity = False

    @property
    def dt(self) -> float:
        return self.native.hold_interval_s

    def to_dict(self) -> dict:
        return {"native_action_spec": self.native.to_dict(), "native_action_spec_hash": self.native.content_hash,
                "arm": self.arm, "gripper": self.native.gripper.kind, "frame": self.frame,
                "rotation": self.rotation, "translation_scale_m": self.translation_scale_m,
                "rotation_scale_rad": self.rotation_scale_rad, "ik": "skills (mink differential IK, TCP site)",
                "max_ik_error_m": self.max_ik_error_m, "integration_dt_s": self.dt,
                "native_control_rate_hz": self.native.control_frequency_hz,
                "bridge_control_rate_hz": self.reference.control_frequency_hz,
                "open_loop_horizon": int(self.open_loop_horizon)}

    def step_targets(self, rows: np.ndarray, current) -> tuple[np.ndarray, list[str]]:
        """Native rows -> absolute step targets (joints, width); reasons when the IK misses."""
        q = np.asarray(current, dtype=np.float64)[:7]
        position, rotation = self.kinematics.pose(q)
        out = np.empty((len(rows), 8))
        for i, row in enumerate(rows):
            step = row[:3] * self.translation_scale_m
            turn = rotation_from_axis_angle(row[3:6] * self.rotation_scale_rad)
            if self.frame == "base":
                position, rotation = position + step, turn @ rotation
            else:
                position, rotation = position + rotation @ step, rotation @ turn
            q, error = self.kinematics.solve(q, position, rotation)
            if error > self.max_ik_error_m:
                return out[:i], [f"IK misses the hand pose of row {i} by {error * 1000:.1f} mm "
                                 f"(limit {self.max_ik_error_m * 1000:.1f} mm)"]
            closed = float(np.clip((row[6] + 1.0) / 2.0, 0.0, 1.0))
            out[i, :7] = q
            out[i, 7] = self.reference.gripper.open_width_m * (1.0 - closed)
        return out, []

    def validate(self, chunk, evidence_version: int, latest_evidence_version: int, current) -> ChunkVerdict:
        as_sent = dataclasses.replace(self.native, mode="absolute")
        nv = validate_chunk(as_sent, chunk, evidence_version, latest_evidence_version)
        native = {"spec": self.native.name, "status": nv.status, "reasons": list(nv.reasons),
                  "clipped_values": nv.clipped_values, "requested": nv.requested}
        if not nv.accepted:
            return ChunkVerdict(nv.status, [f"native: {r}" for r in nv.reasons], None, None, 0,
                                nv.evidence_version, nv.latest_evidence_version, native)
        executed = nv.applied[:int(self.open_loop_horizon)] if self.open_loop_horizon else nv.applied
        native["executed_rows"] = int(len(executed))
        targets, misses = self.step_targets(executed, current)
        if misses:
            return ChunkVerdict("rejected", [f"native: {r}" for r in misses], None, None, 0,
                                nv.evidence_version, nv.latest_evidence_version, native)
        cur = np.asarray(current, dtype=np.float64)
        converted = resample_steps(targets, cur, self.dt, self.reference.hold_interval_s,
                                   self.reference.gripper_index)
        reference = self.reference if len(converted) <= self.reference.max_chunk_length else \
            dataclasses.replace(self.reference, max_chunk_length=len(converted))
        v = validate_chunk(reference, converted, evidence_version, latest_evidence_version)
        native["step_targets"] = [[float(x) for x in r] for r in targets]
        v.native = native
        if v.status == "accepted" and nv.clipped_values:
            v.status = "clipped"
        v.clipped_values += nv.clipped_values
        v.reasons = [f"native: {r}" for r in nv.reasons] + v.reasons
        return v


def ee_delta_conversion(reference: ActionSpec, kinematics, control_rate_hz: float = 20.0, frame: str = "base",
                        rotation: str = "axis_angle", translation_scale_m: float = 0.05,
                        rotation_scale_rad: float = 0.5, open_loop_horizon: int = 0,
                        max_ik_error_m: float = MAX_IK_ERROR_M) -> EndEffectorDeltaConversion:
    return EndEffectorDeltaConversion(ee_delta_spec(reference, control_rate_hz), reference, kinematics, frame,
                                      rotation, float(translation_scale_m), float(rotation_scale_rad),
                                      int(open_loop_horizon or 0), float(max_ik_error_m))


__all__ = ["EndEffectorDeltaConversion", "ee_delta_conversion", "ee_delta_spec", "rotation_from_axis_angle",
           "axis_angle_from_rotation", "EE_FRAMES", "ROTATION_FORMATS", "GRIPPER_SIGN_CLOSED_POSITIVE",
           "GripperConvention"]
