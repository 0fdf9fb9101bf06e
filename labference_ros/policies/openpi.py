"""`openpi`: an OpenPI policy server over its websocket protocol.

Spoken directly (openpi-client pins numpy<2): connect, receive the server's
metadata message, then per step send a msgpack map of numpy arrays and
receive a map holding "actions" [H x dim]. A text frame from the server is
its error report. The request layout and the reply's action convention
come from a named profile (policies/openpi_profiles.py, system_params
`profile`); the bridge converts the reply into the reference interface
(core/action_conversion.py). An API key travels as OpenPI's
"Authorization: Api-Key ..." header, read from the environment variable
named by `api_key_env` and never stored in params or records. Any
transport or protocol failure raises EvaluationValidityError. Frames over
max_reply_bytes are refused by the websocket layer from their header, msgpack
arrays and binaries are bounded while decoding, and an actions array over
max_reply_rows is refused before it is copied (policies/limits.py).
"""
from __future__ import annotations

import os
import time
from contextlib import ExitStack

import numpy as np
from websockets.exceptions import WebSocketException
from websockets.sync.client import connect

from labference_ros.core.observation import PolicyObservation
from labference_ros.core.system import EvaluationValidityError, TestedSystem
from labference_ros.policies import conventions, msgpack_numpy
from labference_ros.policies.openpi_profiles import PARAM_KEYS, ProfileError, build_profile
from labference_ros.policies.limits import MAX_ROW_DIM, ReplyTooLarge, check_rows, rejection_limit, reply_limits
from labference_ros.policies.latency import LatencyLog
from labference_ros.policies.request_support import RequestSupport

ACTIONS_KEY = "actions"
ROBOARENA_RESET_REPLY = "reset successful"  # RoboArena's server answers a reset with this text frame


class OpenPiPolicy(RequestSupport, TestedSystem):
    name = "openpi"
    optional_params = PARAM_KEYS  # the request/response profile's options (openpi_profiles.py)

    def __init__(self, spec=None, **params):
        params.setdefault("host", "127.0.0.1")
        params.setdefault("port", 8000)
        params.setdefault("open_timeout_s", 5.0)
        params.setdefault("timeout_s", 30.0)
        params.setdefault("max_prompt_chars", 512)
        params.setdefault("profile", "joint_position")
        params.setdefault("api_key_env", "")  # the variable's name; its value is read at connect time
        super().__init__(spec, **params)
        self._init_support()
        try:
            self.openpi_profile = build_profile(self.params, self.spec)
        except ProfileError as e:
            raise ValueError(f"openpi: {e}") from e
        # The bridge validates replies through this conversion (native -> reference).
        self.action_conversion = self.openpi_profile.actions
        self.max_bytes, self.max_rows = reply_limits(self.params, self.spec)
        # Every chunk rejected is an error (core.rejections), not a run that holds to its deadline.
        self.rejected_chunks_limit = rejection_limit(self.params, self.spec)
        self._conn = None
        self._stack = ExitStack()
        self.server_metadata: dict = {}
        self.last_request: bytes = b""
        self.latency = LatencyLog()

    @property
    def uri(self) -> str:
        return f"ws://{self.params['host']}:{int(self.params['port'])}"

    def _headers(self) -> dict | None:
        var = self.params["api_key_env"]
        if not var:
            return None
        key = os.environ.get(var, "")
        if not key:
            raise EvaluationValidityError(f"api_key_env names {var!r}, which is not set in the environment")
        return {"Authorization": f"Api-Key {key}"}

    def _connect(self) -> None:
        self.close()
        headers = self._headers()
        try:
            self._conn = self._stack.enter_context(connect(
                self.uri, compression=None, max_size=self.max_bytes, additional_headers=headers,
                open_timeout=float(self.params["open_timeout_s"])))
            meta = self._conn.recv(timeout=float(self.params["timeout_s"]))
        except (OSError, TimeoutError, WebSocketException) as e:
            self.close()
            raise self._transport_error(e) from e
        self.server_metadata = self._decode(meta, "metadata")
        # The server's own description against the profile's conventions, before any step.
        conventions.check(self.openpi_profile.name, self.openpi_profile.conventions(), self.server_metadata,
                          self.openpi_profile.resize)

    @property
    def roboarena(self) -> bool:
        return self.openpi_profile.protocol == "roboarena"

    def _exchange(self, body: bytes, what: str):
        try:
            self._conn.send(body)
            return self._conn.recv(timeout=float(self.params["timeout_s"]))
        except (OSError, TimeoutError, WebSocketException) as e:
            self.close()
            raise self._transport_error(e) from e

    def _roboarena_reset(self) -> None:
        """RoboArena: `endpoint: reset` (with the session id) opens the episode."""
        request = {"endpoint": "reset"}
        if self.server_metadata.get("needs_session_id"):
            request["session_id"] = self.session_id
        frame = self._exchange(msgpack_numpy.packb(request), "reset")
        if frame != ROBOARENA_RESET_REPLY:
            if isinstance(frame, str):
                raise EvaluationValidityError(f"OpenPI server error (reset): {frame[:500]}")
            raise EvaluationValidityError(f"RoboArena server {self.uri} answered the reset with "
                                          f"{len(frame)} bytes, not {ROBOARENA_RESET_REPLY!r}")

    def _decode(self, frame, what: str, arrays: bool = False) -> dict:
        if isinstance(frame, str):
            raise EvaluationValidityError(f"OpenPI server error ({what}): {frame[:500]}")
        try:
            # Bytes are bounded by the frame limit; lists of rows by the array length.
            msg = msgpack_numpy.unpackb(frame, max_array_len=self.max_rows * MAX_ROW_DIM)
        except ValueError as e:
            if "exceeds max" in str(e):  # msgpack's own length limits
                raise ReplyTooLarge(f"OpenPI server {self.uri} {what} too large: {e}") from e
            raise EvaluationValidityError(f"OpenPI {what} is not valid msgpack: {e}") from e
        except Exception as e:  # msgpack raises several unrelated types
            raise EvaluationValidityError(f"OpenPI {what} is not valid msgpack: {e}") from e
        if arrays and isinstance(msg, np.ndarray):  # RoboArena replies with the action array itself
            return {ACTIONS_KEY: msg}
        if not isinstance(msg, dict):
            raise EvaluationValidityError(f"OpenPI {what} is not a map")
        return msg

    def reset(self, session_id: str, policy_seed: int) -> None:
        # The protocol has no reset message: a fresh connection is the
        # declared session boundary.
        super().reset(session_id, policy_seed)
        self.reset_support()
        self.latency = LatencyLog()
        self._connect()
        if self.roboarena:
            self._roboarena_reset()

    def request(self, obs: PolicyObservation) -> dict:
        prompt = obs.instruction
        if len(prompt) > int(self.params["max_prompt_chars"]):
            raise EvaluationValidityError(f"prompt of {len(prompt)} chars exceeds the declared limit")
        request = self.openpi_profile.request.build(obs)
        if self.roboarena:
            request["endpoint"] = "infer"
            if self.server_metadata.get("needs_session_id"):
                request["session_id"] = self.session_id
        support = self.take_support()
        if support:  # optional field, only when the evaluator delivered support (request_support.py)
            request["support"] = support
        return request

    def profile(self) -> dict:
        """Adds the request layout, the reply's action convention and the
        server's metadata (as last received) to the run.json profile."""
        out = super().profile()
        out["openpi"] = {**self.openpi_profile.describe(), "server_metadata": _jsonable(self.server_metadata)}
        return out

    def act(self, observation: PolicyObservation, evaluator=None) -> np.ndarray:
        if self._conn is None:
            self._connect()
        body = msgpack_numpy.packb(self.request(observation))
        self.last_request = body
        sent = time.perf_counter()
        frame = self._exchange(body, "reply")
        round_trip = time.perf_counter() - sent
        reply = self._decode(frame, "reply", arrays=self.roboarena)
        self.latency.add(round_trip, _jsonable(reply.get("server_timing")))
        actions = reply.get(ACTIONS_KEY)
        if actions is None:
            raise EvaluationValidityError(f"OpenPI reply has no 'actions' (keys: {sorted(map(str, reply))})")
        check_rows(f"OpenPI server {self.uri}", actions, self.max_rows)
        try:
            return np.asarray(actions, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise EvaluationValidityError("OpenPI 'actions' is not numeric") from e

    @property
    def last_timing(self) -> dict | None:
        """The last request's round trip and the server's own timing (chunk records)."""
        return self.latency.last

    def end_episode(self, reason: str = "stopped") -> dict | None:
        """Per-episode latency: policy_actions.jsonl's system_summary and run.json's usage."""
        return {"usage": {"policy_latency": self.latency.summary()}}

    def _transport_error(self, e: Exception) -> EvaluationValidityError:
        sent = getattr(e, "sent", None)
        if sent is not None and sent.code == 1009:  # we closed it: a frame over max_size
            return ReplyTooLarge(f"OpenPI server {self.uri} reply too large: a frame over the limit of "
                                 f"{self.max_bytes} bytes (max_reply_bytes)")
        if isinstance(e, TimeoutError):
            return EvaluationValidityError(f"OpenPI server {self.uri} timed out after "
                                           f"{float(self.params['timeout_s']):g} s")
        if isinstance(e, ConnectionRefusedError):
            return EvaluationValidityError(f"OpenPI server {self.uri} unreachable (connection refused)")
        # type and message only: a handshake error's repr could carry request headers
        return EvaluationValidityError(f"OpenPI server {self.uri}: {type(e).__name__}: {e}")

    def close(self) -> None:
        if self._conn is not None:
            self._conn = None
            try:
                self._stack.close()
            except Exception:  # closing a broken socket must not mask the cause
                pass
            self._stack = ExitStack()


def _jsonable(value, depth: int = 0):
    """Server metadata for run.json: arrays as lists (small ones) or a
    shape/dtype note, bytes as their length."""
    if depth > 8:
        return repr(value)[:200]
    if isinstance(value, dict):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist() if value.size <= 64 else {"ndarray": list(value.shape), "dtype": value.dtype.str}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": len(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)[:200]
