"""ActionSpec: what a tested system's action chunk means (paper 5.1), and the
check every returned chunk passes before anything reaches the robot.

A chunk is an [L x dim] array. The verdict keeps the requested rows and the
rows that would be applied, so clipping, rejection and staleness stay
visible in the records (paper 5.2). Pure: no ROS, no simulator.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from labference_ros.core.robots import PANDA, RobotModel

# Franka Panda joint position limits, rad (datasheet; core.robots has every model).
PANDA_JOINT_NAMES = PANDA.arm_joints
PANDA_LOWER = PANDA.lower
PANDA_UPPER = PANDA.upper
PANDA_HAND_MAX_WIDTH = PANDA.hand_max_width

REPRESENTATIONS = ("joint", "end_effector")
# velocity: arm rows are joint velocities, integrated by core.action_conversion.
MODES = ("absolute", "incremental", "velocity")
LIMIT_HANDLING = ("reject", "clip")


@dataclass(frozen=True)
class GripperConvention:
    """How the gripper column is read. Reference: the value is the target
    finger width in metres. A value below `grasp_below_m` is a Franka-Hand
    grasp of an object about that wide with `grasp_force_n` per finger;
    any other value is a move to that width at `speed_mps`."""
    kind: str = "target_width_m"
    open_width_m: float = PANDA_HAND_MAX_WIDTH
    grasp_below_m: float = 0.048  # widest object (sample, 44 mm) < this < narrowest open command
    grasp_force_n: float = 10.0
    speed_mps: float = 0.1
    epsilon_inner_m: float = 0.005
    epsilon_outer_m: float = 0.005

    def command(self, value: float) -> dict:
        """Column value -> Franka-Hand command fields (GripperCommand.msg)."""
        grasp = value < self.grasp_below_m
        return {"grasp": bool(grasp), "width": float(value), "speed": self.speed_mps,
                "force": self.grasp_force_n if grasp else 0.0,
                "epsilon_inner": self.epsilon_inner_m, "epsilon_outer": self.epsilon_outer_m}


@dataclass(frozen=True)
class ActionSpec:
    name: str
    representation: str  # joint | end_effector
    dim: int
    mode: str  # absolute | incremental
    frame: str
    units: tuple[str, ...]
    dimension_names: tuple[str, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    # Per dimension: "reject" a chunk with a value beyond limits, or "clip" it.
    limit_handling: tuple[str, ...]
    gripper: GripperConvention = field(default_factory=GripperConvention)
    gripper_index: int = 7
    control_frequency_hz: float = 50.0
    max_chunk_length: int = 50

    def __post_init__(self) -> None:
        if self.representation not in REPRESENTATIONS:
            raise ValueError(f"representation must be one of {REPRESENTATIONS}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        for seq in (self.units, self.dimension_names, self.lower, self.upper, self.limit_handling):
            if len(seq) != self.dim:
                raise ValueError(f"every per-dimension field needs {self.dim} entries")
        if any(h not in LIMIT_HANDLING for h in self.limit_handling):
            raise ValueError(f"limit handling must be one of {LIMIT_HANDLING}")
        if not (self.control_frequency_hz > 0 and self.max_chunk_length >= 1):
            raise ValueError("control frequency and max chunk length must be positive")

    @property
    def hold_interval_s(self) -> float:
        return 1.0 / self.control_frequency_hz

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ActionSpec":
        d = dict(d)
        d["gripper"] = GripperConvention(**d.get("gripper", {}))
        for k in ("units", "dimension_names", "lower", "upper", "limit_handling"):
            d[k] = tuple(d[k])
        return cls(**d)

    @property
    def content_hash(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def reference_joint_spec(control_frequency_hz: float = 50.0, max_chunk_length: int = 50,
                         robot: RobotModel = PANDA) -> ActionSpec:
    """The reference 8-dim absolute joint interface: the arm's seven joint targets
    (rad; panda_joint1..7 for the simulated Panda, fr3_joint1..7 on an FR3) and one
    gripper target width (m). Arm values beyond the robot's position limits reject
    the chunk; the gripper width is clipped to [0, 0.08] m."""
    return ActionSpec(
        name=f"{robot.name}_joint8_abs", representation="joint", dim=8, mode="absolute",
        frame="joint_space", units=("rad",) * 7 + ("m",),
        dimension_names=robot.arm_joints + ("gripper_width",),
        lower=robot.lower + (0.0,), upper=robot.upper + (robot.hand_max_width,),
        limit_handling=("reject",) * 7 + ("clip",),
        control_frequency_hz=control_frequency_hz, max_chunk_length=max_chunk_length)


# verdict statuses
ACCEPTED = "accepted"
CLIPPED = "clipped"  # accepted after clipping some values
REJECTED = "rejected"
STALE = "stale"


@dataclass
class ChunkVerdict:
    status: str
    reasons: list[str]
    requested: np.ndarray | None  # as returned (float64), None if not an array at all
    applied: np.ndarray | None  # absolute targets to execute; None unless accepted
    clipped_values: int = 0
    evidence_version: int = -1
    latest_evidence_version: int = -1
    # A system with its own action convention: its rows as returned, before
    # core.action_conversion turned them into `requested` (reference rows).
    native: dict | None = None

    @property
    def accepted(self) -> bool:
        return self.status in (ACCEPTED, CLIPPED)

    def record(self) -> dict:
        """Log entry: requested and applied rows side by side."""
        def rows(a):
            return None if a is None else [[_num(x) for x in r] for r in a]
        entry = {"status": self.status, "reasons": list(self.reasons),
                 "evidence_version": self.evidence_version,
                 "latest_evidence_version": self.latest_evidence_version,
                 "clipped_values": self.clipped_values,
                 "requested": rows(self.requested), "applied": rows(self.applied)}
        if self.native is not None:
            entry["native"] = {**self.native, "requested": rows(self.native.get("requested"))}
        return entry


def _num(x: float):
    x = float(x)
    return x if math.isfinite(x) else repr(x)  # JSON has no NaN/inf


def validate_chunk(spec: ActionSpec, chunk, evidence_version: int, latest_evidence_version: int,
                   current=None) -> ChunkVerdict:
    """Check one chunk. `current` (dim values) is needed for incremental
    specs: rows are deltas accumulated from it."""
    def verdict(status, reasons, requested=None, applied=None, clipped=0):
        return ChunkVerdict(status, reasons, requested, applied, clipped,
                            int(evidence_version), int(latest_evidence_version))

    if evidence_version < latest_evidence_version:
        return verdict(STALE, [f"evidence version {evidence_version} is older than the latest "
                               f"handoff {latest_evidence_version}"], _as_array(chunk))
    try:
        arr = np.asarray(chunk, dtype=np.float64)
    except (TypeError, ValueError):
        return verdict(REJECTED, ["chunk is not numeric"])
    if arr.ndim == 1 and arr.size == spec.dim:
        arr = arr[None, :]  # a single action is a chunk of length 1
    if arr.ndim != 2:
        return verdict(REJECTED, [f"chunk must be [L x {spec.dim}], got shape {arr.shape}"], arr)
    reasons = []
    if arr.shape[1] != spec.dim:
        reasons.append(f"dimension {arr.shape[1]} != {spec.dim}")
    if arr.shape[0] == 0:
        reasons.append("empty chunk")
    if arr.shape[0] > spec.max_chunk_length:
        reasons.append(f"length {arr.shape[0]} exceeds the maximum {spec.max_chunk_length}")
    if reasons:
        return verdict(REJECTED, reasons, arr)
    bad = ~np.isfinite(arr)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        return verdict(REJECTED, [f"{int(bad.sum())} non-finite values, first at row {r} "
                                  f"({spec.dimension_names[c]})"], arr)
    target = arr
    if spec.mode == "incremental":
        if current is None:
            return verdict(REJECTED, ["incremental chunk but no current state to add to"], arr)
        target = np.asarray(current, float)[None, :] + np.cumsum(arr, axis=0)
    lo, hi = np.asarray(spec.lower), np.asarray(spec.upper)
    applied = target.copy()
    clipped = 0
    for c in range(spec.dim):
        out = (target[:, c] < lo[c]) | (target[:, c] > hi[c])
        if not out.any():
            continue
        if spec.limit_handling[c] == "clip":
            applied[:, c] = np.clip(target[:, c], lo[c], hi[c])
            clipped += int(out.sum())
        else:
            r = int(np.argmax(out))
            reasons.append(f"{spec.dimension_names[c]} = {target[r, c]:.4f} at row {r} outside "
                           f"[{lo[c]}, {hi[c]}] {spec.units[c]}")
    if reasons:
        return verdict(REJECTED, reasons, arr)
    if clipped:
        return verdict(CLIPPED, [f"{clipped} values clipped to limits"], arr, applied, clipped)
    return verdict(ACCEPTED, [], arr, applied)


def _as_array(chunk):
    try:
        return np.asarray(chunk, dtype=np.float64)
    except (TypeError, ValueError):
        return None
