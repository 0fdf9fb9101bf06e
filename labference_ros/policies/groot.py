"""`groot`: a GR00T N1.6/N1.7 policy server (Isaac-GR00T's PolicyServer).

ZeroMQ REQ/REP on tcp://host:port, msgpack with numpy arrays as .npy bytes
(policies/groot_wire.py, never pickle). Endpoints: `ping`,
`get_modality_config`, `reset` {"options"} and `get_action` {"observation",
"options"}, whose reply is [action, info]. The observation is nested by
modality with batch and time axes: video {key: uint8 [1, 1, H, W, 3]},
state {key: float32 [1, 1, D]}, language {key: [[instruction]]}; the action
is {key: [1, H, D]}, concatenated in `action_keys` order into the rows the
bridge converts (7 arm columns and the gripper, core/action_conversion.py).

The modality mapping (which camera or composite fills which video key,
which state fields fill which state key, the language key, the action keys
and their convention) comes from a profile (`profile`, default `droid`) and
the options below; at each episode's start the server's
get_modality_config answer is compared with it and any difference stops
the episode before its first step with one line naming both sides.
An API token travels as GR00T's `api_token` field, read from the variable
named by `api_token_env`. Transport and protocol failures raise
EvaluationValidityError.
"""
from __future__ import annotations

import os
import time

import numpy as np

from labference_ros.core.action_conversion import (DROID_CONTROL_RATE_HZ, DROID_OPEN_LOOP_HORIZON, GRIPPER_CLOSED_1,
                                                   GRIPPER_WIDTH_M, ConversionError)
from labference_ros.core.observation import REGISTERED_CAMERAS, PolicyObservation
from labference_ros.core.system import EvaluationValidityError, TestedSystem
from labference_ros.policies import groot_wire
from labference_ros.policies.conventions import MISMATCH, ConventionMismatch
from labference_ros.policies.latency import LatencyLog
from labference_ros.policies.limits import check_rows, rejection_limit, reply_limits
from labference_ros.policies.openpi import _jsonable
from labference_ros.policies.openpi_profiles import (POSE_FIELDS, ImageSlot, ProfileError, StateEntry,
                                                     build_conversion, declared_conventions, hand_kinematics)

GROOT_PROFILES = {
    # A DROID-style embodiment: two views, joints and the normalised gripper, absolute joint
    # targets per 15 Hz step. Key names differ between checkpoints: the modality config check
    # names every difference, and the options below rename them.
    "droid": {
        "video": {"exterior_image_1_left": "front+display", "wrist_image_left": "wrist"},
        "state": {"joint_position": ["joint_position"], "gripper_position": ["gripper_closed_1"]},
        "language_key": "annotation.language.language_instruction",
        "action_keys": ["joint_position", "gripper_position"],
        "actions": {"arm": "position", "gripper": GRIPPER_CLOSED_1, "control_rate_hz": DROID_CONTROL_RATE_HZ,
                    "open_loop_horizon": DROID_OPEN_LOOP_HORIZON}},
    # The project's own convention: every camera, joints and the width in metres, 50 Hz rows.
    "joint_position": {
        "video": {"front": "front", "wrist": "wrist", "display": "display"},
        "state": {"joint_position": ["joint_position"], "gripper_width": ["gripper_width_m"]},
        "language_key": "annotation.human.task_description",
        "action_keys": ["joint_position", "gripper_width"],
        "actions": {"arm": "position", "gripper": GRIPPER_WIDTH_M}},
}
OPTIONS = ("profile", "video", "state", "language_key", "action_keys", "actions", "resize", "drop_cameras",
           "inset")


class GrootPolicy(TestedSystem):
    name = "groot"
    optional_params = OPTIONS

    def __init__(self, spec=None, **params):
        params.setdefault("host", "127.0.0.1")
        params.setdefault("port", 5555)
        params.setdefault("timeout_s", 30.0)
        params.setdefault("api_token_env", "")
        params.setdefault("profile", "droid")
        super().__init__(spec, **params)
        try:
            self._build_mapping()
        except (ProfileError, ConversionError, TypeError) as e:
            raise ValueError(f"groot: {e}") from e
        self.max_bytes, self.max_rows = reply_limits(self.params, self.spec)
        self.rejected_chunks_limit = rejection_limit(self.params, self.spec)
        self.modality_config: dict = {}
        self.latency = LatencyLog()
        self.last_request: bytes = b""
        self._context = None
        self._socket = None

    # the modality mapping ---------------------------------------------------
    def _build_mapping(self) -> None:
        p = self.params
        name = p["profile"]
        if name not in GROOT_PROFILES:
            raise ProfileError(f"unknown GR00T profile {name!r}; known: {list(GROOT_PROFILES)}")
        preset = GROOT_PROFILES[name]
        resize = p.get("resize")
        inset = dict(p.get("inset", {}))
        self.video = tuple(ImageSlot((k,), str(src), tuple(int(x) for x in resize) if resize else None, "HWC",
                                     float(inset.get("scale", 0.4)), str(inset.get("corner", "top_right")))
                           for k, src in dict(p.get("video", preset["video"])).items())
        self.state = tuple(StateEntry((k,), tuple(v if isinstance(v, list) else [v]), "float32")
                           for k, v in dict(p.get("state", preset["state"])).items())
        self.language_key = str(p.get("language_key", preset["language_key"]))
        self.action_keys = tuple(p.get("action_keys", preset["action_keys"]))
        if not self.video or not self.action_keys:
            raise ProfileError("a GR00T mapping needs at least one video key and one action key")
        used = {c for s in self.video for c in s.cameras}
        dropped = tuple(p.get("drop_cameras", ()))
        silent = [c for c in REGISTERED_CAMERAS if c not in used and c not in dropped]
        if silent:
            raise ProfileError(f"camera(s) {silent} fill no video key: map them or name them in drop_cameras")
        acts = {**preset["actions"], **dict(p.get("actions", {}))}
        self.action_conversion = build_conversion(self.spec, acts)

    def conventions(self) -> dict:
        request = {"images": [s.describe() for s in self.video], "state": [s.describe() for s in self.state]}
        return {**declared_conventions(self.action_conversion, request), "language_key": self.language_key,
                "action_keys": list(self.action_keys)}

    # transport --------------------------------------------------------------
    def _token(self) -> str | None:
        var = self.params["api_token_env"]
        if not var:
            return None
        token = os.environ.get(var, "")
        if not token:
            raise EvaluationValidityError(f"api_token_env names {var!r}, which is not set in the environment")
        return token

    @property
    def uri(self) -> str:
        return f"tcp://{self.params['host']}:{int(self.params['port'])}"

    def _open(self) -> None:
        import zmq  # only a groot run needs ZeroMQ

        self.close()
        self._context = zmq.Context()
        sock = self._context.socket(zmq.REQ)
        timeout_ms = int(float(self.params["timeout_s"]) * 1000)
        sock.setsockopt(zmq.RCVTIMEO, timeout_ms)
        sock.setsockopt(zmq.SNDTIMEO, timeout_ms)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, int(self.max_bytes))
        sock.connect(self.uri)
        self._socket = sock

    def _call(self, endpoint: str, data: dict | None = None):
        import zmq

        if self._socket is None:
            self._open()
        body = groot_wire.request(endpoint, data, self._token())
        if endpoint == "get_action":
            self.last_request = body
        try:
            self._socket.send(body)
            frame = self._socket.recv()
        except zmq.Again as e:  # a REQ socket that missed its reply cannot be used again
            self.close()
            # ZeroMQ drops a message over MAXMSGSIZE without a word: a reply too large looks the same.
            raise EvaluationValidityError(f"GR00T server {self.uri} timed out after "
                                          f"{float(self.params['timeout_s']):g} s ({endpoint}; or its reply "
                                          f"was over max_reply_bytes {self.max_bytes}, which ZeroMQ drops)") from e
        except zmq.ZMQError as e:
            self.close()
            raise EvaluationValidityError(f"GR00T server {self.uri} unreachable ({endpoint}): {e}") from e
        try:
            reply = groot_wire.unpackb(frame, max_bin_len=self.max_bytes)
        except groot_wire.WireError as e:
            raise EvaluationValidityError(f"GR00T {endpoint} reply refused: {e}") from e
        if isinstance(reply, dict) and "error" in reply:
            raise EvaluationValidityError(f"GR00T server error ({endpoint}): {str(reply['error'])[:500]}")
        return reply

    # episode ------------------------------------------------------------------
    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.latency = LatencyLog()
        self._open()
        ping = self._call("ping")
        if not (isinstance(ping, dict) and ping.get("status") == "ok"):
            raise EvaluationValidityError(f"GR00T server {self.uri} answered ping with {str(ping)[:200]}")
        config = self._call("get_modality_config")
        if not isinstance(config, dict):
            raise EvaluationValidityError("GR00T get_modality_config reply is not a map")
        self.modality_config = config
        found = self._modality_mismatches(config)
        if found:
            raise ConventionMismatch(f"{MISMATCH} with GR00T profile {self.params['profile']!r}: "
                                     f"{'; '.join(found)}")
        self._call("reset", {"options": None})

    def _modality_mismatches(self, config: dict) -> list[str]:
        out = []

        def keys_of(modality):
            entry = config.get(modality)
            return None if not isinstance(entry, dict) else list(entry.get("modality_keys") or [])

        def compare(modality, declared):
            server = keys_of(modality)
            if server is None:
                out.append(f"{modality}: server declares none, profile {sorted(declared)}")
            elif sorted(server) != sorted(declared):
                out.append(f"{modality} keys: server {sorted(server)}, profile {sorted(declared)}")

        compare("video", [s.key[0] for s in self.video])
        compare("state", [s.key[0] for s in self.state])
        compare("language", [self.language_key])
        compare("action", list(self.action_keys))
        for modality in ("video", "state"):
            entry = config.get(modality)
            indices = entry.get("delta_indices") if isinstance(entry, dict) else None
            steps = len(indices) if isinstance(indices, (list, tuple)) and indices else 1
            if indices is not None and not isinstance(indices, (list, tuple)):
                out.append(f"{modality} delta_indices: server {indices!r}, profile a list ([0])")
            if steps != 1:
                out.append(f"{modality} horizon: server {steps} steps, profile 1 (the current observation)")
        space = {"position": "absolute", "delta": "relative", "velocity": "velocity",
                 "ee_delta": "relative"}[self.action_conversion.arm]
        action = config.get("action")
        for cfg in (action.get("action_configs") or []) if isinstance(action, dict) else []:
            if not isinstance(cfg, dict):
                continue
            kind = str(cfg.get("type", "")).lower().rsplit(".", 1)[-1]
            rep = str(cfg.get("rep", "")).lower().rsplit(".", 1)[-1]
            if kind == "eef" and self.action_conversion.arm != "ee_delta":
                out.append("action type: server 'eef', profile 'non_eef' (joint space)")
            elif rep and rep not in (space, "delta" if space == "relative" else space):
                out.append(f"action rep: server {rep!r}, profile {space!r}")
        return out

    def observation(self, obs: PolicyObservation) -> dict:
        video = {s.key[0]: s.render(obs.images)[None, None] for s in self.video}
        pose = None
        if any(f in POSE_FIELDS for s in self.state for f in s.fields):
            pose = self._kinematics().pose(obs.joint_positions)
        state = {s.key[0]: s.value(obs, self.spec.gripper.open_width_m, pose)[None, None] for s in self.state}
        return {"video": video, "state": state, "language": {self.language_key: [[obs.instruction]]}}

    def _kinematics(self):
        kinematics = getattr(self.action_conversion, "kinematics", None)
        if kinematics is None:
            kinematics = self._hand = getattr(self, "_hand", None) or hand_kinematics()
        return kinematics

    def act(self, observation: PolicyObservation, evaluator=None) -> np.ndarray:
        sent = time.perf_counter()
        reply = self._call("get_action", {"observation": self.observation(observation), "options": None})
        round_trip = time.perf_counter() - sent
        if not (isinstance(reply, (list, tuple)) and len(reply) == 2 and isinstance(reply[0], dict)):
            raise EvaluationValidityError("GR00T get_action reply is not [action, info]")
        action, info = reply
        # The server's own timing where it sends a map of them (an array or anything else: none).
        self.latency.add(round_trip, _jsonable(info) if isinstance(info, dict) and info else None)
        missing = [k for k in self.action_keys if k not in action]
        if missing:
            raise EvaluationValidityError(f"GR00T action has no {missing} (keys: {sorted(map(str, action))})")
        parts = []
        for key in self.action_keys:
            value = action[key]
            if not isinstance(value, np.ndarray) or value.ndim != 3 or value.shape[0] != 1:
                raise EvaluationValidityError(f"GR00T action {key!r} is not a [1, H, D] array")
            if value.dtype.kind not in "biuf":  # .npy without pickle still carries strings or records
                raise EvaluationValidityError(f"GR00T action {key!r} is not numeric (dtype {value.dtype})")
            check_rows(f"GR00T server {self.uri}", value[0], self.max_rows)
            parts.append(np.asarray(value[0], dtype=np.float64))
        if len({p.shape[0] for p in parts}) != 1:
            raise EvaluationValidityError("GR00T action keys have different horizons")
        return np.concatenate(parts, axis=1)

    @property
    def last_timing(self) -> dict | None:
        return self.latency.last

    def end_episode(self, reason: str = "stopped") -> dict | None:
        return {"usage": {"policy_latency": self.latency.summary()}}

    def profile(self) -> dict:
        out = super().profile()
        out["groot"] = {"profile": self.params["profile"], "uri": self.uri,
                        "video": [s.describe() for s in self.video], "state": [s.describe() for s in self.state],
                        "language_key": self.language_key, "action_keys": list(self.action_keys),
                        "actions": self.action_conversion.to_dict(), "conventions": self.conventions(),
                        "modality_config": _jsonable(self.modality_config)}
        return out

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None
        if self._context is not None:
            self._context.term()
            self._context = None
