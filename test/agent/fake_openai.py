"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1.

It plays a recorded conversation: one scripted step per request, whatever
the request says (it does not reason). Every request body is kept so tests
can scan the exact bytes that crossed the boundary."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def call(name: str, args=None, raw: str | None = None) -> dict:
    """A tool call; `raw` sends the arguments string verbatim (malformed plans)."""
    return {"name": name, "arguments": raw if raw is not None else json.dumps(args or {})}


def step(*calls, content: str = "", usage=(100, 20), status: int = 200, body: bytes = b"",
         on_request=None, headers=None) -> dict:
    return {"calls": list(calls), "content": content, "usage": usage, "status": status,
            "body": body, "on_request": on_request, "headers": dict(headers or {})}


class FakeChatServer:
    def __init__(self, script: list[dict]):
        self.script = list(script)
        self.requests: list[bytes] = []
        self.headers: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.requests.append(body)
                outer.headers.append(dict(self.headers))
                code, payload, extra = outer.reply(self.path, body)
                self.send_response(code)
                for k, v in extra.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.n = 0

    def reply(self, path: str, body: bytes) -> tuple[int, bytes]:
        if path != "/v1/chat/completions":
            return 404, b"{}", {}
        if self.n >= len(self.script):
            return 500, b'{"error": "script exhausted"}', {}
        s = self.script[self.n]
        self.n += 1
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

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


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
