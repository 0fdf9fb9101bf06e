"""Conversions between a tested system's own action convention and the
reference interface the bridge executes (absolute joint targets in rad plus
a gripper target width in m).

A policy server trained elsewhere answers in its own convention: DROID
policies send normalised joint velocities and a gripper position in 0..1
(1 = closed); others send joint deltas. An ActionConversion pairs the
system's declared ActionSpec (its "native" spec) with the reference spec:
native rows are checked against the native limits first, converted, and
then checked against the reference limits by validate_chunk. The inverse
(`from_reference`) exists so that test servers and dataset exports speak
the native convention with the same arithmetic. Pure: numpy only.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from labference_ros.core.action_spec import (ACCEPTED, CLIPPED, PANDA_JOINT_NAMES, ActionSpec, ChunkVerdict,
                                             GripperConvention, validate_chunk)

ARM_CONVENTIONS = ("position", "delta", "velocity")
GRIPPER_WIDTH_M = "target_width_m"  # the reference: target finger width in metres
GRIPPER_CLOSED_1 = "normalised_closed_1"  # 0 = fully open, 1 = fully closed (DROID)
GRIPPER_CONVENTIONS = (GRIPPER_WIDTH_M, GRIPPER_CLOSED_1)

# DROID's robot env turns a unit joint velocity into 0.2 rad per step at
# 15 Hz; as a rate that is 3 rad/s, which keeps the arm's speed the same at
# any control rate the bridge runs.
DROID_VELOCITY_SCALE_RAD_S = 3.0


class ConversionError(ValueError):
    """A native spec the reference cannot express."""


@dataclass(frozen=True)
class ActionConversion:
    native: ActionSpec
    reference: ActionSpec
    arm: str = "position"  # position | delta | velocity
    velocity_scale: float = 1.0  # rad/s per native unit (velocity only)

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
        if abs(self.native.control_frequency_hz - self.reference.control_frequency_hz) > 1e-9:
            raise ConversionError("native and reference control rates differ: rows are held one reference interval")
        if not self.velocity_scale > 0:
            raise ConversionError("velocity scale must be positive")

    @property
    def identity(self) -> bool:
        return self.native == self.reference

    @property
    def dt(self) -> float:
        return self.reference.hold_interval_s

    def to_dict(self) -> dict:
        return {"native_action_spec": self.native.to_dict(), "native_action_spec_hash": self.native.content_hash,
                "arm": self.arm, "gripper": self.native.gripper.kind, "velocity_scale_rad_s": self.velocity_scale,
                "integration_dt_s": self.dt}

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
        return out

    def _width(self, values: np.ndarray) -> np.ndarray:
        if self.native.gripper.kind == GRIPPER_CLOSED_1:
            return self.reference.gripper.open_width_m * (1.0 - values)
        return values

    # reference -> native ---------------------------------------------------
    def from_reference(self, rows, current) -> np.ndarray:
        """Absolute reference rows -> the native rows whose conversion from
        `current` gives them back (up to rounding)."""
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
        nv = validate_chunk(as_sent, chunk, evidence_version, latest_evidence_version)
        native = {"spec": self.native.name, "status": nv.status, "reasons": list(nv.reasons),
                  "clipped_values": nv.clipped_values, "requested": nv.requested}
        if not nv.accepted:
            return ChunkVerdict(nv.status, [f"native: {r}" for r in nv.reasons], None, None, 0,
                                nv.evidence_version, nv.latest_evidence_version, native)
        converted = self.to_reference(nv.applied, current)
        v = validate_chunk(self.reference, converted, evidence_version, latest_evidence_version)
        v.native = native
        if v.status == ACCEPTED and nv.clipped_values:
            v.status = CLIPPED
        v.clipped_values += nv.clipped_values
        v.reasons = [f"native: {r}" for r in nv.reasons] + v.reasons
        return v


def native_spec(reference: ActionSpec, arm: str, gripper: str,
                velocity_limit: float = 1.0, delta_limit_rad: float = 0.5) -> ActionSpec:
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
        gripper=conv, gripper_index=7, control_frequency_hz=reference.control_frequency_hz,
        max_chunk_length=reference.max_chunk_length)


def make_conversion(reference: ActionSpec, arm: str = "position", gripper: str = GRIPPER_WIDTH_M,
                    velocity_scale: float = DROID_VELOCITY_SCALE_RAD_S, **limits) -> ActionConversion:
    """The conversion for a named convention; position + width is the
    identity (the reference spec itself)."""
    if arm == "position" and gripper == GRIPPER_WIDTH_M and not limits:
        return ActionConversion(reference, reference)
    return ActionConversion(native_spec(reference, arm, gripper, **limits), reference, arm,
                            velocity_scale if arm == "velocity" else 1.0)


def identity(reference: ActionSpec) -> ActionConversion:
    return ActionConversion(reference, reference)


__all__ = ["ActionConversion", "ConversionError", "GripperConvention", "make_conversion", "native_spec",
           "identity", "ARM_CONVENTIONS", "GRIPPER_CONVENTIONS", "GRIPPER_WIDTH_M", "GRIPPER_CLOSED_1",
           "DROID_VELOCITY_SCALE_RAD_S"]
