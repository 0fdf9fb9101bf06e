"""A minimal OpenAI-compatible chat-completions client (standard library only).

Base URL, model and the name of the environment variable holding the key come
from the profile; nothing is hard-coded. One bounded transport retry is made
only for an identified overload rejection (HTTP 429/503 whose body says so):
the original request bytes are resent unchanged and the wait is charged.
Everything else that is not a usable reply is an EvaluationValidityError.
"""
from __future__ import annotations

import http.client
import json
import os
import re
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Callable

from labference_ros.core.system import EvaluationValidityError

# Bodies that identify a capacity rejection (not a bad request or a quota error).
OVERLOAD_BODY = re.compile(rb"overload|high demand|server is busy|temporarily unavailable|"
                           rb"try again later|UNAVAILABLE|capacity", re.IGNORECASE)
OVERLOAD_STATUS = (429, 503)


@dataclass
class CallTiming:
    """One model call as the episode is charged for it (clock seconds)."""
    started: float
    elapsed_s: float = 0.0  # everything, including a retry wait
    latency_s: float = 0.0  # the final successful HTTP exchange
    model_s: float | None = None  # server-reported processing time, when given
    overload_rejections: int = 0
    retry_wait_s: float = 0.0
    http_status: int | None = None
    request_bytes: int = 0
    bodies: list[bytes] = field(default_factory=list)  # every body sent (for the leak scan)


class ModelCallFailed(EvaluationValidityError):
    """No usable reply: the episode is invalid, but the call is still charged."""

    def __init__(self, message: str, timing: CallTiming):
        super().__init__(message)
        self.timing = timing


@dataclass
class ChatClient:
    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0
    overload_wait_s: float = 2.0  # used when the server gives no Retry-After
    overload_wait_max_s: float = 10.0
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def _headers(self) -> dict:
        h = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        if key:  # local servers often need none
            h["Authorization"] = f"Bearer {key}"
        return h

    def _post(self, body: bytes) -> tuple[int, bytes, dict]:
        url = self.base_url.rstrip("/") + "/chat/completions"
        req = urllib.request.Request(url, data=body, method="POST", headers=self._headers())
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                return resp.status, resp.read(), dict(resp.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read() or b"", dict(e.headers or {})
        except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError,
                http.client.HTTPException) as e:
            raise EvaluationValidityError(f"model server {url} unreachable: "
                                          f"{getattr(e, 'reason', e)}") from e

    def _overload_wait(self, headers: dict) -> float:
        try:
            wait = float(headers.get("Retry-After", headers.get("retry-after", "")))
        except ValueError:
            wait = self.overload_wait_s
        return max(0.0, min(wait, self.overload_wait_max_s))

    def complete(self, request: dict) -> tuple[dict, CallTiming]:
        """POST one chat-completions request; -> (reply JSON, timing).
        A call without a usable reply raises ModelCallFailed carrying its timing."""
        request = dict(request, model=self.model)
        body = json.dumps(request, separators=(",", ":")).encode()
        timing = CallTiming(started=self.clock(), request_bytes=len(body))
        try:
            return self._exchange(body, timing), timing
        except EvaluationValidityError as e:
            # Still a charged call (its time, rejections and bodies are kept).
            timing.elapsed_s = self.clock() - timing.started
            raise ModelCallFailed(str(e), timing) from e

    def _exchange(self, body: bytes, timing: CallTiming) -> dict:
        for attempt in range(2):
            t0 = self.clock()
            timing.bodies.append(body)
            status, raw, headers = self._post(body)
            timing.latency_s = self.clock() - t0
            timing.http_status = status
            if status in OVERLOAD_STATUS and OVERLOAD_BODY.search(raw):
                timing.overload_rejections += 1  # counted even when it is not retried
                if attempt == 0:
                    wait = self._overload_wait(headers)
                    self.sleep(wait)
                    timing.retry_wait_s += wait
                    continue  # the same bytes again, once
            break
        timing.elapsed_s = self.clock() - timing.started
        ms = headers.get("openai-processing-ms") or headers.get("Openai-Processing-Ms")
        if ms is not None:
            try:
                timing.model_s = min(float(ms) / 1000.0, timing.latency_s)
            except ValueError:
                pass
        if status != 200:
            raise EvaluationValidityError(f"model server answered HTTP {status}: {raw[:200]!r}")
        try:
            reply = json.loads(raw)
            reply["choices"][0]["message"]
        except (ValueError, UnicodeDecodeError, KeyError, IndexError, TypeError) as e:
            raise EvaluationValidityError("model server reply is not a chat completion") from e
        return reply


def usage_of(reply: dict) -> tuple[int | None, int | None]:
    """Tokens in/out as the server reported them; None (never 0) when absent."""
    u = reply.get("usage")
    if not isinstance(u, dict):
        return None, None
    def num(k):
        v = u.get(k)
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    return num("prompt_tokens"), num("completion_tokens")
