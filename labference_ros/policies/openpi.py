"""`openpi`: an OpenPI policy server over its websocket protocol.

Spoken directly (openpi-client pins numpy<2): connect, receive the server's
metadata message, then per step send a msgpack map of numpy arrays and
receive a map holding "actions" [H x dim]. A text frame from the server is
its error report. Camera and state keys are mapped by the `keys` param
(defaults follow OpenPI's DROID example). Any transport or protocol failure
raises EvaluationValidityError.
"""
from __future__ import annotations

from contextlib import ExitStack

import numpy as np
from websockets.exceptions import WebSocketException
from websockets.sync.client import connect

from labference_ros.core.observation import PolicyObservation
from labference_ros.core.system import EvaluationValidityError, TestedSystem
from labference_ros.policies import msgpack_numpy

DEFAULT_KEYS = {
    "front": "observation/exterior_image_1_left",
    "wrist": "observation/wrist_image_left",
    "display": "observation/exterior_image_2_left",
    "joint_positions": "observation/joint_position",
    "gripper": "observation/gripper_position",
    "prompt": "prompt",
}


class OpenPiPolicy(TestedSystem):
    name = "openpi"
    def __init__(self, spec=None, **params):
        params.setdefault("host", "127.0.0.1")
        params.setdefault("port", 8000)
        params.setdefault("open_timeout_s", 5.0)
        params.setdefault("timeout_s", 30.0)
        params.setdefault("max_prompt_chars", 512)
        params["keys"] = {**DEFAULT_KEYS, **params.get("keys", {})}
        super().__init__(spec, **params)
        self._conn = None
        self._stack = ExitStack()
        self.server_metadata: dict = {}
        self.last_request: bytes = b""

    @property
    def uri(self) -> str:
        return f"ws://{self.params['host']}:{int(self.params['port'])}"

    def _connect(self) -> None:
        self.close()
        try:
            self._conn = self._stack.enter_context(connect(
                self.uri, compression=None, max_size=None,
                open_timeout=float(self.params["open_timeout_s"])))
            meta = self._conn.recv(timeout=float(self.params["timeout_s"]))
        except (OSError, TimeoutError, WebSocketException) as e:
            self.close()
            raise EvaluationValidityError(f"OpenPI server {self.uri}: {e!r}") from e
        self.server_metadata = self._decode(meta, "metadata")

    def _decode(self, frame, what: str) -> dict:
        if isinstance(frame, str):
            raise EvaluationValidityError(f"OpenPI server error ({what}): {frame[:500]}")
        try:
            msg = msgpack_numpy.unpackb(frame)
        except Exception as e:  # msgpack raises several unrelated types
            raise EvaluationValidityError(f"OpenPI {what} is not valid msgpack: {e}") from e
        if not isinstance(msg, dict):
            raise EvaluationValidityError(f"OpenPI {what} is not a map")
        return msg

    def reset(self, session_id: str, policy_seed: int) -> None:
        # The protocol has no reset message: a fresh connection is the
        # declared session boundary.
        super().reset(session_id, policy_seed)
        self._connect()

    def request(self, obs: PolicyObservation) -> dict:
        k = self.params["keys"]
        prompt = obs.instruction
        if len(prompt) > int(self.params["max_prompt_chars"]):
            raise EvaluationValidityError(f"prompt of {len(prompt)} chars exceeds the declared limit")
        req = {k[c]: img for c, img in obs.images.items() if c in k}
        req[k["joint_positions"]] = obs.joint_positions.astype(np.float64)
        req[k["gripper"]] = np.array([obs.gripper_width], dtype=np.float64)
        req[k["prompt"]] = prompt
        return req

    def act(self, observation: PolicyObservation, evaluator=None) -> np.ndarray:
        if self._conn is None:
            self._connect()
        body = msgpack_numpy.packb(self.request(observation))
        self.last_request = body
        try:
            self._conn.send(body)
            frame = self._conn.recv(timeout=float(self.params["timeout_s"]))
        except (OSError, TimeoutError, WebSocketException) as e:
            self.close()
            raise EvaluationValidityError(f"OpenPI server {self.uri}: {e!r}") from e
        reply = self._decode(frame, "reply")
        actions = reply.get("actions")
        if actions is None:
            raise EvaluationValidityError(f"OpenPI reply has no 'actions' (keys: {sorted(map(str, reply))})")
        try:
            return np.asarray(actions, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise EvaluationValidityError("OpenPI 'actions' is not numeric") from e

    def close(self) -> None:
        if self._conn is not None:
            self._conn = None
            try:
                self._stack.close()
            except Exception:  # closing a broken socket must not mask the cause
                pass
            self._stack = ExitStack()
