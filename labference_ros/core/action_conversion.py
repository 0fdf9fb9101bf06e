"""Conversions between a tested system's own action convention and the
reference interface the bridge executes (absolute joint targets in rad plus
a gripper target width in m).

A policy server trained elsewhere answers in its own convention: DROID
policies send normalised joint velocities and a gripper position in 0..1
(1 = closed), one row per 15 Hz step; others send joint deltas.

Step semantics: a native row is one step of the native spec's control rate.
Rows of another rate than the reference's are executed at their own rate:
the absolute target of native step i is reached at (i + 1) / native rate,
and the reference rows between are interpolated linearly at the bridge's
control period (the gripper keeps the value of the native step in effect),
so the arm follows the same step targets as on the system's own robot.
DROID's velocity rule (droid RobotIKSolver.joint_velocity_to_delta): a row
whose largest |velocity| exceeds 1 is scaled as a whole vector to 1, then
each unit is velocity_scale / native rate rad per step (0.2 rad at 3 rad/s
and 15 Hz). `open_loop_horizon` keeps only the first rows of each chunk
(openpi's DROID example executes 8 before asking again). An ActionConversion pairs the
system's declared ActionSpec (its "native" spec) with the reference spec:
native rows are checked against the native limits first, converted, and
then checked against the reference limits by validate_chunk. The inverse
(`from_reference`) exists so that test servers and dataset exports speak
the native convention with the same arithmetic. Pure: numpy only.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from labference_ros.core.action_spec import (ACCEPTED, CLIPPED, PANDA_JOINT_NAMES, ActionSpec, ChunkVerdict,
                                             GripperConvention, validate_chunk)

ARM_CONVENTIONS = ("position", "delta", "velocity")
VELOCITY_RULES = ("clip", "scale_vector")  # per joint, or the whole row as DROID's robot does
GRIPPER_WIDTH_M = "target_width_m"  # the reference: target finger width in metres
GRIPPER_CLOSED_1 = "normalised_closed_1"  # 0 = fully open, 1 = fully closed (DROID)
GRIPPER_CONVENTIONS = (GRIPPER_WIDTH_M, GRIPPER_CLOSED_1)

# DROID's robot env turns a unit joint velocity into 0.2 rad per step at
# 15 Hz (droid RobotIKSolver: max_joint_delta 0.2, control_hz 15): 3 rad/s.
DROID_VELOCITY_SCALE_RAD_S = 3.0
DROID_CONTROL_RATE_HZ = 15.0
DROID_OPEN_LOOP_HORIZON = 8  # openpi's examples/droid executes 8 rows per request


class ConversionError(ValueError):
    """A native spec the reference cannot express."""


@dataclass(frozen=True)
class ActionConversion:
    native: ActionSpec
    reference: ActionSpec
    arm: str = "position"  # position | delta | velocity
    velocity_scale: float = 1.0  # rad/s per native unit (velocity only)
    velocity_rule: str = "clip"  # clip | scale_vector (velocity only)
    open_loop_horizon: int = 0  # rows of a chunk executed (0: all)
    gripper_threshold: float | None = None  # normalised gripper: > threshold closes fully, else opens

    def __post_init__(self) -> None:
        if self.arm not in ARM_CONVENTIONS:
            raise ConversionError(f"arm convention must be one of {ARM_CONVENTIONS}, got {self.arm!r}")
        if self.native.gripper.kind not in GRIPPER_CONVENTIONS:
            raise ConversionError(f"gripper convention must be one of {GRIPPER_CONVENTIONS}")
        if self.reference.mode != "absolute" or self.reference.gripper.kind != GRIPPER_WIDTH_M:
            raise ConversionError("the reference spec must be absolute joint targets with a width in metres")
        if (self.native.dim, self.native.gripper_index) != (self.reference.dim, self.reference.gripper_index):
            raise ConversionError(f"native spec {self.native.name!r} must have the reference's "
                                  f"{self.reference.dim} dims with the gripper at {self.reference.gripper_index}")
        if self.native.control_frequency_hz > self.reference.control_frequency_hz + 1e-9:
            raise ConversionError(f"the native control rate {self.native.control_frequency_hz:g} Hz exceeds the "
                                  f"bridge's {self.reference.control_frequency_hz:g} Hz")
        if not self.velocity_scale > 0:
            raise ConversionError("velocity scale must be positive")
        if self.velocity_rule not in VELOCITY_RULES:
            raise ConversionError(f"velocity rule must be one of {VELOCITY_RULES}, got {self.velocity_rule!r}")
        if int(self.open_loop_horizon) < 0:
            raise ConversionError("open loop horizon must be 0 (all rows) or positive")
        if self.gripper_threshold is not None and self.native.gripper.kind != GRIPPER_CLOSED_1:
            raise ConversionError("a gripper threshold needs the normalised gripper convention")

    @property
    def identity(self) -> bool:
        return self.native == self.reference

    @property
    def dt(self) -> float:
        """One native step (s): what a velocity or delta row spans."""
        return self.native.hold_interval_s

    @property
    def resampled(self) -> bool:
        return abs(self.native.control_frequency_hz - self.reference.control_frequency_hz) > 1e-9

    def to_dict(self) -> dict:
        return {"native_action_spec": self.native.to_dict(), "native_action_spec_hash": self.native.content_hash,
                "arm": self.arm, "gripper": self.native.gripper.kind, "velocity_scale_rad_s": self.velocity_scale,
                "velocity_rule": self.velocity_rule,
                "max_step_rad": self.velocity_scale * self.dt if self.arm == "velocity" else None,
                "integration_dt_s": self.dt, "native_control_rate_hz": self.native.control_frequency_hz,
                "bridge_control_rate_hz": self.reference.control_frequency_hz,
                "open_loop_horizon": int(self.open_loop_horizon), "gripper_threshold": self.gripper_threshold}

    # native -> reference ---------------------------------------------------
    def to_reference(self, native_rows: np.ndarray, current) -> np.ndarray:
        """[L x dim] native rows (already within native limits) -> absolute
        reference rows. `current` is the measured state (joints rad, width m)
        that deltas and velocities start from."""
        rows = np.asarray(native_rows, dtype=np.float64)
        cur = np.asarray(current, dtype=np.float64)
        out = np.empty_like(rows)
        g = self.reference.gripper_index
        arm = [c for c in range(rows.shape[1]) if c != g]
        if self.arm == "position":
            out[:, arm] = rows[:, arm]
        elif self.arm == "delta":
            out[:, arm] = cur[arm][None, :] + np.cumsum(rows[:, arm], axis=0)
        else:
            step = self.velocity_scale * self.dt
            out[:, arm] = cur[arm][None, :] + np.cumsum(rows[:, arm] * step, axis=0)
        out[:, g] = self._width(rows[:, g])
        return self._resample(out, cur) if self.resampled else out

    def _resample(self, targets: np.ndarray, cur: np.ndarray) -> np.ndarray:
        return resample_steps(targets, cur, self.dt, self.reference.hold_interval_s, self.reference.gripper_index)

    def _width(self, values: np.ndarray) -> np.ndarray:
        if self.native.gripper.kind == GRIPPER_CLOSED_1:
            return self.reference.gripper.open_width_m * (1.0 - values)
        return values

    # reference -> native ---------------------------------------------------
    def from_reference(self, rows, current) -> np.ndarray:
        """Absolute reference rows -> the native rows whose conversion from
        `current` gives them back (up to rounding). Same rate only."""
        if self.resampled:
            raise ConversionError("from_reference needs the native and reference rates to be equal")
        rows = np.asarray(rows, dtype=np.float64)
        cur = np.asarray(current, dtype=np.float64)
        out = np.empty_like(rows)
        g = self.reference.gripper_index
        arm = [c for c in range(rows.shape[1]) if c != g]
        if self.arm == "position":
            out[:, arm] = rows[:, arm]
        else:
            steps = np.diff(np.vstack([cur[arm][None, :], rows[:, arm]]), axis=0)
            out[:, arm] = steps if self.arm == "delta" else steps / (self.velocity_scale * self.dt)
        if self.native.gripper.kind == GRIPPER_CLOSED_1:
            out[:, g] = 1.0 - rows[:, g] / self.reference.gripper.open_width_m
        else:
            out[:, g] = rows[:, g]
        return out

    # the bridge's check ------------------------------------------------------
    def validate(self, chunk, evidence_version: int, latest_evidence_version: int, current) -> ChunkVerdict:
        """Native limits, conversion, reference limits. The verdict's
        `requested` rows are the converted (reference) rows; the rows as the
        system returned them stay in `native`."""
        if self.identity:
            return validate_chunk(self.reference, chunk, evidence_version, latest_evidence_version, current)
        # Native limits apply to the values as sent (velocities, deltas), not to integrated targets.
        as_sent = dataclasses.replace(self.native, mode="absolute")
        scaled_rows, chunk_in = 0, chunk
        if self.arm == "velocity" and self.velocity_rule == "scale_vector":
            chunk, scaled_rows = scale_velocity_rows(chunk, self.native.gripper_index, self.native.dim)
        nv = validate_chunk(as_sent, chunk, evidence_version, latest_evidence_version)
        native = {"spec": self.native.name, "status": nv.status, "reasons": list(nv.reasons),
                  "clipped_values": nv.clipped_values,
                  "requested": nv.requested if chunk is chunk_in else _as_rows(chunk_in)}
        if self.velocity_rule == "scale_vector" and self.arm == "velocity":
            native["scaled_rows"] = scaled_rows  # DROID's robot scales these too: not a clip
        if not nv.accepted:
            return ChunkVerdict(nv.status, [f"native: {r}" for r in nv.reasons], None, None, 0,
                                nv.evidence_version, nv.latest_evidence_version, native)
        executed = nv.applied
        if self.open_loop_horizon:
            executed = executed[:int(self.open_loop_horizon)]
        native["executed_rows"] = int(len(executed))
        if self.gripper_threshold is not None:
            executed = executed.copy()
            g = self.native.gripper_index
            executed[:, g] = (executed[:, g] > self.gripper_threshold).astype(np.float64)
        converted = self.to_reference(executed, current)
        # Resampled rows may outnumber the native chunk's maximum; their count follows from it.
        reference = self.reference if len(converted) <= self.reference.max_chunk_length else \
            dataclasses.replace(self.reference, max_chunk_length=len(converted))
        v = validate_chunk(reference, converted, evidence_version, latest_evidence_version)
        v.native = native
        if v.status == ACCEPTED and nv.clipped_values:
            v.status = CLIPPED
        v.clipped_values += nv.clipped_values
        v.reasons = [f"native: {r}" for r in nv.reasons] + v.reasons
        return v


def resample_steps(targets: np.ndarray, cur: np.ndarray, native_dt: float, ref_dt: float,
                   gripper_index: int) -> np.ndarray:
    """Native step targets -> reference rows one bridge interval apart: the arm
    interpolated from `cur` through each step's target, reached at the step's end;
    the gripper value of the step in effect when the reference row starts."""
    n = targets.shape[0]
    span = n * native_dt
    # Every step's target is reached: the last row may end up to one bridge interval late.
    m = max(1, math.ceil(span / ref_dt - 1e-6))
    times = np.minimum(np.arange(1, m + 1) * ref_dt, span)
    knots = np.arange(0, n + 1) * native_dt
    out = np.empty((m, targets.shape[1]))
    for c in range(targets.shape[1]):
        if c != gripper_index:
            out[:, c] = np.interp(times, knots, np.concatenate([[cur[c]], targets[:, c]]))
    step_of_row = np.minimum(np.floor((times - ref_dt) / native_dt + 1e-9).astype(int), n - 1)
    out[:, gripper_index] = targets[np.maximum(step_of_row, 0), gripper_index]
    return out


def scale_velocity_rows(chunk, gripper_index: int, dim: int):
    """DROID's rule: a row whose largest |joint velocity| exceeds 1 is divided by
    it (the direction kept). Returns (chunk, rows scaled); anything not a finite
    [L x dim] array is returned as it came, for validate_chunk to reject."""
    try:
        arr = np.asarray(chunk, dtype=np.float64)
    except (TypeError, ValueError):
        return chunk, 0
    if arr.ndim != 2 or arr.shape[1] != dim or not np.isfinite(arr).all():
        return chunk, 0
    arm = [c for c in range(dim) if c != gripper_index]
    peak = np.abs(arr[:, arm]).max(axis=1) if arr.shape[0] else np.zeros(0)
    over = peak > 1.0
    if not over.any():
        return chunk, 0
    out = arr.copy()
    out[np.ix_(over, arm)] /= peak[over][:, None]
    return out, int(over.sum())


def _as_rows(chunk):
    try:
        return np.asarray(chunk, dtype=np.float64)
    except (TypeError, ValueError):
        return None


def native_spec(reference: ActionSpec, arm: str, gripper: str,
                velocity_limit: float = 1.0, delta_limit_rad: float = 0.5,
                control_rate_hz: float | None = None) -> ActionSpec:
    """The ActionSpec a server with this convention declares: joint space,
    the reference's rate and chunk length, its own units and limits.
    Velocities beyond +-velocity_limit and gripper values outside the range
    are clipped (recorded); positions beyond the Panda limits reject."""
    if arm not in ARM_CONVENTIONS:
        raise ConversionError(f"arm convention must be one of {ARM_CONVENTIONS}, got {arm!r}")
    if gripper not in GRIPPER_CONVENTIONS:
        raise ConversionError(f"gripper convention must be one of {GRIPPER_CONVENTIONS}, got {gripper!r}")
    if arm == "position":
        lo, hi, units, handling = reference.lower[:7], reference.upper[:7], ("rad",) * 7, ("reject",) * 7
        mode = "absolute"
    elif arm == "delta":
        lo, hi = (-delta_limit_rad,) * 7, (delta_limit_rad,) * 7
        units, handling, mode = ("rad",) * 7, ("reject",) * 7, "incremental"
    else:
        lo, hi = (-velocity_limit,) * 7, (velocity_limit,) * 7
        units, handling, mode = ("normalised",) * 7, ("clip",) * 7, "velocity"
    if gripper == GRIPPER_CLOSED_1:
        g_lo, g_hi, g_unit, g_name = 0.0, 1.0, "1 (1 = closed)", "gripper_position"
    else:
        g_lo, g_hi, g_unit, g_name = 0.0, reference.gripper.open_width_m, "m", "gripper_width"
    conv = dataclasses.replace(reference.gripper, kind=gripper)
    arm_names = {"position": PANDA_JOINT_NAMES,
                 "delta": tuple(f"{n}_delta" for n in PANDA_JOINT_NAMES),
                 "velocity": tuple(f"{n}_velocity" for n in PANDA_JOINT_NAMES)}[arm]
    return ActionSpec(
        name=f"panda_joint_{arm}_{'normgrip' if gripper == GRIPPER_CLOSED_1 else 'width'}",
        representation="joint", dim=8, mode=mode, frame="joint_space",
        units=units + (g_unit,), dimension_names=arm_names + (g_name,),
        lower=tuple(lo) + (g_lo,), upper=tuple(hi) + (g_hi,), limit_handling=handling + ("clip",),
        gripper=conv, gripper_index=7,
        control_frequency_hz=float(control_rate_hz or reference.control_frequency_hz),
        max_chunk_length=reference.max_chunk_length)


def make_conversion(reference: ActionSpec, arm: str = "position", gripper: str = GRIPPER_WIDTH_M,
                    velocity_scale: float = DROID_VELOCITY_SCALE_RAD_S, velocity_rule: str = "clip",
                    open_loop_horizon: int = 0, gripper_threshold: float | None = None,
                    control_rate_hz: float | None = None, **limits) -> ActionConversion:
    """The conversion for a named convention; position + width at the
    reference rate with every row executed is the identity (the reference
    spec itself)."""
    same_rate = control_rate_hz is None or abs(float(control_rate_hz) - reference.control_frequency_hz) < 1e-9
    if arm == "position" and gripper == GRIPPER_WIDTH_M and not limits and same_rate and not open_loop_horizon:
        return ActionConversion(reference, reference)
    return ActionConversion(native_spec(reference, arm, gripper, control_rate_hz=control_rate_hz, **limits),
                            reference, arm, velocity_scale if arm == "velocity" else 1.0, velocity_rule,
                            int(open_loop_horizon or 0), gripper_threshold)


def identity(reference: ActionSpec) -> ActionConversion:
    return ActionConversion(reference, reference)


__all__ = ["ActionConversion", "ConversionError", "VELOCITY_RULES", "scale_velocity_rows", "GripperConvention",
           "make_conversion", "native_spec",
           "identity", "ARM_CONVENTIONS", "GRIPPER_CONVENTIONS", "GRIPPER_WIDTH_M", "GRIPPER_CLOSED_1",
           "DROID_VELOCITY_SCALE_RAD_S"]
