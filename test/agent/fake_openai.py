"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1.

It plays a recorded conversation: one scripted step per request, whatever
the request says (it does not reason). A step may instead be a callable that
receives the parsed request body and returns the step to play, for a model
whose answer depends on what it was shown. Every request body is kept so
tests can scan the exact bytes that crossed the boundary."""
from __future__ import annotations

import json

from fake_servers import LoopbackJsonServer  # test/policies, on the path via test/agent/conftest.py


def call(name: str, args=None, raw: str | None = None) -> dict:
    """A tool call; `raw` sends the arguments string verbatim (malformed plans)."""
    return {"name": name, "arguments": raw if raw is not None else json.dumps(args or {})}


def step(*calls, content: str = "", usage=(100, 20), status: int = 200, body: bytes = b"",
         on_request=None, headers=None) -> dict:
    return {"calls": list(calls), "content": content, "usage": usage, "status": status,
            "body": body, "on_request": on_request, "headers": dict(headers or {})}


class FakeChatServer(LoopbackJsonServer):
    def __init__(self, script: list[dict]):
        super().__init__()
        self.script = list(script)
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.n = 0

    @property
    def requests(self) -> list[bytes]:
        return [body for _path, _headers, body in self.exchanges]

    @property
    def headers(self) -> list[dict]:
        return [headers for _path, headers, _body in self.exchanges]

    def reply(self, path: str, body: bytes) -> tuple[int, bytes, dict]:
        if path != "/v1/chat/completions":
            return 404, b"{}", {}
        if self.n >= len(self.script):
            return 500, b'{"error": "script exhausted"}', {}
        s = self.script[self.n]
        self.n += 1
        if callable(s):
            s = s(json.loads(body))
        if s["on_request"]:
            s["on_request"]()
        if s["status"] != 200:
            return s["status"], s["body"], s["headers"]
        msg = {"role": "assistant", "content": s["content"] or None}
        if s["calls"]:
            msg["tool_calls"] = [{"id": f"call_{self.n}_{i}", "type": "function", "function": c}
                                 for i, c in enumerate(s["calls"])]
        reply = {"id": f"chatcmpl-{self.n}", "object": "chat.completion", "model": "fake",
                 "choices": [{"index": 0, "message": msg,
                              "finish_reason": "tool_calls" if s["calls"] else "stop"}]}
        if s["usage"] is not None:
            reply["usage"] = {"prompt_tokens": s["usage"][0], "completion_tokens": s["usage"][1],
                              "total_tokens": sum(s["usage"])}
        return 200, json.dumps(reply).encode(), s["headers"]

    def bodies(self) -> list[dict]:
        return [json.loads(b) for b in self.requests]


class FakeClock:
    """The agent's clock in tests: moves only when told (no wall-clock tests)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, s: float) -> None:
        self.now += s

    def sleep(self, s: float) -> None:
        self.now += s
