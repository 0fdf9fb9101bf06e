"""The policy observation: a whitelist projection (paper 5.1), its delivery
receipt, the serialized request remote systems receive, and the leak check
that scans those bytes for evaluator-only values.

project_observation() copies named channels out of whatever the runtime
holds; anything not named here (world state, instance, legal sets) cannot
reach a tested system through it. Pure: numpy only.
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
import struct
import uuid
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import numpy as np

REGISTERED_CAMERAS = ("front", "wrist", "display")
OBSERVATION_HISTORY_STEPS = 8  # the system's own last steps delivered with each observation
ARM_JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))
FINGER_JOINTS = ("panda_finger_joint1", "panda_finger_joint2")
# The only keys project_observation reads from its source.
WHITELIST = ("images", "image_stamps", "camera_calibration", "joint_state", "joint_setpoint", "instruction",
             "history", "sim_time", "evidence_version", "observation_id", "episode_id")


@dataclass(frozen=True)
class PolicyObservation:
    observation_id: str
    episode_id: str
    sim_time: float
    evidence_version: int
    images: dict[str, np.ndarray]  # camera -> HxWx3 uint8
    image_stamps: dict[str, float]  # camera -> sim time of acquisition
    joint_positions: np.ndarray  # (7,) rad, panda_joint1..7
    gripper_width: float  # m, sum of the finger joints
    instruction: str  # public instruction and rule
    history: tuple[dict, ...] = ()  # authorized history (own past actions, receipts)
    camera_calibration: dict[str, dict] = field(default_factory=dict)  # fixed cameras only
    # The arm target the runtime last commanded (rad, 7; Franka's q_d), None before the
    # first: the measured joints lag it while moving, or when something blocks the arm.
    joint_setpoint: np.ndarray | None = None

    @property
    def last_chunk_ran(self) -> bool:
        """Whether the runtime ran the system's last chunk (accepted, maybe clipped); a
        rejected or stale one never reached the arm. True before the first."""
        status = self.history[-1].get("chunk_status") if self.history else None
        return status in (None, "accepted", "clipped")

    @property
    def last_chunk_ran_to_end(self) -> bool:
        """Whether every row of the last chunk was sent to the arm (none dropped by
        newer evidence or a pause). False before the first."""
        if not self.history or not self.last_chunk_ran:
            return False
        return not self.history[-1].get("rows_dropped", 0)

    @property
    def last_chunk_rows_run(self) -> int | None:
        """How many rows of the last chunk were sent to the arm (0: refused or stale,
        or dropped before its first); None before the first chunk."""
        if not self.history:
            return None
        if not self.last_chunk_ran:
            return 0
        last = self.history[-1]
        return int(last.get("rows", 0)) - int(last.get("rows_dropped", 0))

    @property
    def restart_joint_positions(self) -> np.ndarray:
        """Where a move restarted from rest begins: the setpoint the arm is held at, when
        the runtime reports one (the controller interpolates from it, so a first row at
        the measured joints would jump by whatever the arm lags), else the measured joints."""
        return self.joint_positions if self.joint_setpoint is None else self.joint_setpoint

    @property
    def robot_state(self) -> np.ndarray:
        """(8,): seven joint positions and the gripper width."""
        return np.concatenate([self.joint_positions, [self.gripper_width]])


def project_observation(source: Mapping, cameras: Iterable[str] = REGISTERED_CAMERAS) -> PolicyObservation:
    """Copy the whitelisted channels out of `source` (a dict the runtime
    fills); every other key is ignored. joint_state is {name: position}."""
    cameras = tuple(cameras)
    unknown = [c for c in cameras if c not in REGISTERED_CAMERAS]
    if unknown:
        raise ValueError(f"unregistered cameras {unknown}")
    src = {k: source[k] for k in WHITELIST if k in source}
    images = {}
    for cam in cameras:
        img = np.asarray(src.get("images", {}).get(cam))
        if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
            raise ValueError(f"camera {cam!r}: expected HxWx3 uint8, got {img.dtype} {img.shape}")
        images[cam] = img
    stamps = {c: float(src.get("image_stamps", {}).get(c, src["sim_time"])) for c in cameras}
    js = src["joint_state"]
    missing = [n for n in ARM_JOINTS + FINGER_JOINTS if n not in js]
    if missing:
        raise ValueError(f"joint state lacks {missing}")
    calib = {c: dict(v) for c, v in src.get("camera_calibration", {}).items() if c in cameras}
    setpoint = src.get("joint_setpoint")
    if setpoint is not None:
        setpoint = np.array([float(x) for x in setpoint])
        if setpoint.shape != (len(ARM_JOINTS),) or not np.isfinite(setpoint).all():
            raise ValueError(f"joint setpoint: expected {len(ARM_JOINTS)} finite positions, got {setpoint}")
    return PolicyObservation(
        observation_id=str(src["observation_id"]), episode_id=str(src.get("episode_id", "")),
        sim_time=float(src["sim_time"]), evidence_version=int(src["evidence_version"]),
        images=images, image_stamps=stamps,
        joint_positions=np.array([float(js[n]) for n in ARM_JOINTS]),
        gripper_width=float(sum(float(js[n]) for n in FINGER_JOINTS)),
        instruction=str(src["instruction"]),
        history=tuple(dict(h) for h in src.get("history", ())),
        camera_calibration=calib, joint_setpoint=setpoint)


# -- serialized request ------------------------------------------------------
def _base64_image(img: np.ndarray, data_b64: str) -> dict:
    """A request's image entry in the base64 encoding, with its data text given."""
    return {"encoding": "rgb8", "shape": list(img.shape), "data_b64": data_b64}


def _request_text(request: dict) -> str:
    return json.dumps(request, sort_keys=True, separators=(",", ":"))


def request_dict(obs: PolicyObservation, image_encoding: str = "base64") -> dict:
    """The JSON request remote systems receive. Images as base64 of the raw
    HxWx3 uint8 buffer (with shape) or as nested lists."""
    if image_encoding not in ("base64", "list"):
        raise ValueError("image_encoding must be 'base64' or 'list'")
    images = {}
    for cam, img in obs.images.items():
        if image_encoding == "base64":
            images[cam] = _base64_image(img, base64.b64encode(np.ascontiguousarray(img).tobytes()).decode())
        else:
            images[cam] = {"encoding": "rgb8", "shape": list(img.shape), "data": img.tolist()}
    return {
        "observation_id": obs.observation_id, "episode_id": obs.episode_id,
        "sim_time": obs.sim_time, "evidence_version": obs.evidence_version,
        "images": images, "image_stamps": dict(obs.image_stamps),
        "camera_calibration": obs.camera_calibration,
        "state": {"joint_positions": [float(x) for x in obs.joint_positions],
                  "gripper_width": obs.gripper_width,
                  "joint_setpoint": None if obs.joint_setpoint is None else [float(x) for x in obs.joint_setpoint]},
        "instruction": obs.instruction, "history": list(obs.history),
    }


def serialize_request(obs: PolicyObservation, image_encoding: str = "base64") -> bytes:
    return _request_text(request_dict(obs, image_encoding)).encode()


def payload_hash(obs: PolicyObservation) -> str:
    """sha256 of serialize_request(obs): the JSON is built with a stand-in for each
    image's base64 text, and the hash takes the real text in its place. The same
    digest without JSON-encoding and copying about 1 MB per observation (about a third of
    the time: benchmarks/bench_observation_bytes.py)."""
    encoded = [base64.b64encode(np.ascontiguousarray(img).tobytes()) for img in obs.images.values()]
    # A token no other string of the request can hold: fresh per call, and JSON text
    # cannot break it (letters, digits and dashes only).
    token = f"image-data-{uuid.uuid4().hex}-"
    request = request_dict(dataclasses.replace(obs, images={}))
    request["images"] = {cam: _base64_image(img, f"{token}{k}") for k, (cam, img) in enumerate(obs.images.items())}
    text = _request_text(request)
    h = hashlib.sha256()
    # Split on the quoted stand-ins: JSON text and image numbers alternate.
    for k, piece in enumerate(re.split(f'"{token}([0-9]+)"', text)):
        if k % 2:
            h.update(b'"')
            h.update(encoded[int(piece)])
            h.update(b'"')
        else:
            h.update(piece.encode())
    return h.hexdigest()


def delivery_receipt(obs: PolicyObservation) -> dict:
    """What reached the policy boundary (observations.jsonl)."""
    return {"kind": "observation", "observation_id": obs.observation_id,
            "episode_id": obs.episode_id, "sim_time": obs.sim_time,
            "evidence_version": obs.evidence_version,
            "camera_stamps": dict(obs.image_stamps),
            "image_shapes": {c: list(i.shape) for c, i in obs.images.items()},
            "instruction_sha256": hashlib.sha256(obs.instruction.encode()).hexdigest()[:16],
            "payload_sha256": payload_hash(obs)}


# -- leak check --------------------------------------------------------------
@dataclass(frozen=True)
class EvaluatorSecrets:
    """Evaluator-only values that must never appear in a policy request."""
    sample_mass_g: float
    required_standards: tuple[str, ...] = ()
    legal_set: tuple[str, ...] = ()  # operations rendered as strings, e.g. add(std_50->pan)
    keys: tuple[str, ...] = ()  # forbidden field names (contract hidden_keys)

    @classmethod
    def of_instance(cls, instance, hidden_keys: Iterable[str] = (), legal=()) -> "EvaluatorSecrets":
        return cls(float(instance.sample_mass_g), tuple(instance.goal_set),
                   tuple(str(op) for op in legal), tuple(hidden_keys))


def _number_patterns(value: float) -> list[bytes]:
    """Common text renderings of a mass in grams and kilograms."""
    out = set()
    for v, unit_digits in ((value, (0, 1, 2, 3)), (value / 1000.0, (3, 4, 6))):
        for d in unit_digits:
            out.add(f"{v:.{d}f}")
        out.add(repr(float(v)))
        out.add(f"{v:g}")
    return sorted(s.encode() for s in out)


def _binary_patterns(value: float) -> list[bytes]:
    out = []
    for v in (value, value / 1000.0):
        for fmt in ("<d", ">d", "<f", ">f"):
            out.append(struct.pack(fmt, v))
    return out


@dataclass(frozen=True)
class Leak:
    what: str
    pattern: bytes
    offset: int


def find_leaks(blob: bytes, secrets: EvaluatorSecrets, public_text: str = "",
               exempt: Iterable[bytes] = ()) -> list[Leak]:
    """Scan serialized request bytes for evaluator-only values.

    `exempt` are byte spans of registered camera images (raw or base64):
    pixels are authorized evidence, and image bytes would match short digit
    strings by chance. A number that also appears in the public instruction
    (e.g. a sample of 100 g when the instruction names the 100 g standard)
    cannot be told apart from it and is skipped.
    """
    for span in sorted(set(exempt), key=len, reverse=True):
        if span:
            blob = blob.replace(span, b"")
    public = public_text.encode()
    leaks = []
    for pat in _number_patterns(secrets.sample_mass_g):
        # Not part of a longer number or identifier (0.1300 is not 130).
        rx = re.compile(rb"(?<![0-9A-Za-z_.])" + re.escape(pat) + rb"(?![0-9A-Za-z_])(?!\.[0-9])")
        if rx.search(public):
            continue
        for m in rx.finditer(blob):
            leaks.append(Leak("sample_mass_g", pat, m.start()))
    for pat in _binary_patterns(secrets.sample_mass_g):
        i = blob.find(pat)
        if i >= 0:
            leaks.append(Leak("sample_mass_g(binary)", pat, i))
    for what, items in (("required_standard", secrets.required_standards),
                        ("legal_set", secrets.legal_set), ("hidden_key", secrets.keys)):
        for s in items:
            i = blob.find(s.encode())
            if s and i >= 0:
                leaks.append(Leak(what, s.encode(), i))
    return leaks


def image_spans(obs: PolicyObservation) -> list[bytes]:
    """The encodings of this observation's images that a request may carry."""
    spans = []
    for img in obs.images.values():
        raw = np.ascontiguousarray(img).tobytes()
        listed = json.dumps(img.tolist(), separators=(",", ":")).encode()
        spans += [raw, base64.b64encode(raw), listed]
    return spans
