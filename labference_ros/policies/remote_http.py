"""`http`: a user's policy server behind JSON over HTTP POST.

Request: core.observation.request_dict() plus session_id; images as base64
of the raw rgb8 buffer (with shape) or as nested lists. Reply: a JSON
object with "actions": [[...], ...]. With `accepts_support` declared, a request
may carry the optional "support" field (policies/request_support.py). Reset posts {session_id, policy_seed}
to the reset path. Transport and protocol failures raise
EvaluationValidityError: the evaluation is invalid, the policy did not fail.
A reply over max_reply_bytes is refused before it is read, one over
max_reply_rows before it becomes an array (policies/limits.py).
"""
from __future__ import annotations

import http.client
import json
import socket
import urllib.error
import urllib.request

import numpy as np

from labference_ros.core.observation import PolicyObservation, request_dict
from labference_ros.core.system import EvaluationValidityError, TestedSystem
from labference_ros.policies.limits import check_rows, read_bounded, rejection_limit, reply_limits
from labference_ros.policies.request_support import RequestSupport


class HttpPolicy(RequestSupport, TestedSystem):
    name = "http"

    def __init__(self, spec=None, **params):
        params.setdefault("url", "http://127.0.0.1:8000")
        params.setdefault("act_path", "/act")
        params.setdefault("reset_path", "/reset")  # "" when the server has none
        params.setdefault("timeout_s", 30.0)
        params.setdefault("image_encoding", "base64")
        super().__init__(spec, **params)
        self._init_support()
        self.max_bytes, self.max_rows = reply_limits(self.params, self.spec)
        # Every chunk rejected is an error (core.rejections), not a run that holds to its deadline.
        self.rejected_chunks_limit = rejection_limit(self.params, self.spec)
        self.last_request: bytes = b""  # kept for the leak check and receipts

    def _post(self, path: str, body: bytes) -> dict:
        url = self.params["url"].rstrip("/") + path
        req = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=float(self.params["timeout_s"])) as resp:
                raw = read_bounded(resp, f"policy server {url}", self.max_bytes)
        except urllib.error.HTTPError as e:
            raise EvaluationValidityError(f"policy server {url} answered HTTP {e.code}") from e
        except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError,
                http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise EvaluationValidityError(f"policy server {url} timed out after "
                                              f"{float(self.params['timeout_s']):g} s") from e
            if isinstance(reason, ConnectionRefusedError):
                reason = "connection refused"
            raise EvaluationValidityError(f"policy server {url} unreachable ({reason})") from e
        try:
            reply = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as e:
            raise EvaluationValidityError(f"policy server {url} sent malformed JSON") from e
        if not isinstance(reply, dict):
            raise EvaluationValidityError(f"policy server {url} reply is not a JSON object")
        return reply

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.reset_support()
        if self.params["reset_path"]:
            body = json.dumps({"session_id": session_id, "policy_seed": int(policy_seed)}).encode()
            self._post(self.params["reset_path"], body)

    def act(self, observation: PolicyObservation, evaluator=None) -> np.ndarray:
        req = request_dict(observation, self.params["image_encoding"])
        req["session_id"] = self.session_id
        support = self.take_support()
        if support:  # optional field, only when the evaluator delivered support (request_support.py)
            req["support"] = support
        body = json.dumps(req, sort_keys=True, separators=(",", ":")).encode()
        self.last_request = body
        reply = self._post(self.params["act_path"], body)
        if "actions" not in reply:
            raise EvaluationValidityError(f"reply has no 'actions' (keys: {sorted(reply)})")
        check_rows(f"policy server {self.params['url']}", reply["actions"], self.max_rows)
        try:
            return np.asarray(reply["actions"], dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise EvaluationValidityError("'actions' is not a numeric array") from e
