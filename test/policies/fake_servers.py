"""Stand-in policy servers on 127.0.0.1 (real sockets, started by the test).

Both record every request body they receive, so tests can scan exactly the
bytes that crossed the policy boundary. `mode` selects a failure."""
from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
from websockets.sync.server import serve

from labference_ros.policies import msgpack_numpy

HOME = [0.0, 0.0, 0.0, -1.57079, 0.0, 1.57079, -0.7853, 0.08]


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LoopbackJsonServer:
    """A JSON-over-HTTP peer on 127.0.0.1: keeps every POST as (path, headers,
    body) and answers with what `reply(path, body)` returns: (status, payload,
    extra headers). Subclasses script the replies."""

    def __init__(self):
        self.exchanges: list[tuple[str, dict, bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.exchanges.append((self.path, dict(self.headers), body))
                code, payload, extra = outer.reply(self.path, body)
                self.send_response(code)
                for k, v in extra.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                if getattr(outer, "mode", "") == "huge_undeclared" and self.path != "/reset":
                    self.close_connection = True  # HTTP/1.0: the body ends when the connection does
                else:
                    self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # a client that refused a large reply hung up

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def reply(self, path: str, body: bytes) -> tuple[int, bytes, dict]:
        raise NotImplementedError

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


HUGE_ROWS = 10**6


def rows_json(rows: int) -> bytes:
    """{"actions": [HOME] * rows} as JSON bytes, built without a Python list of rows."""
    row = json.dumps(HOME).encode()
    return b'{"actions":[' + b",".join([row] * rows) + b"]}"


class FakeHttpPolicy(LoopbackJsonServer):
    """mode: ok | slow | reset_hang | malformed | no_actions | server_error | huge (10^6 rows with a
    Content-Length) | huge_undeclared (the same, no Content-Length: ends at close) |
    long (chunk_len rows, within the byte limit). `cycle`: one mode per /reset, in turn."""

    def __init__(self, mode: str = "ok", chunk_len: int = 4, delay_s: float = 2.0, cycle: list[str] | None = None):
        super().__init__()
        self.mode, self.chunk_len, self.delay_s = mode, chunk_len, delay_s
        self.cycle, self.resets = list(cycle or []), 0
        self.url = f"http://127.0.0.1:{self.port}"
        self.huge = rows_json(HUGE_ROWS) if {"huge", "huge_undeclared"} & {mode, *self.cycle} else b""

    @property
    def requests(self) -> list[tuple[str, bytes]]:
        return [(path, body) for path, _headers, body in self.exchanges]

    def reply(self, path: str, body: bytes) -> tuple[int, bytes, dict]:
        if path == "/reset":
            if self.cycle:
                self.mode = self.cycle[self.resets % len(self.cycle)]
            self.resets += 1
            if self.mode == "reset_hang":  # the server's /reset answers only after delay_s
                time.sleep(self.delay_s)
            return 200, b"{}", {}
        if self.mode in ("huge", "huge_undeclared"):
            return 200, self.huge, {}
        if self.mode == "slow":
            time.sleep(self.delay_s)
        if self.mode == "malformed":
            return 200, b"{actions: nope", {}
        if self.mode == "no_actions":
            return 200, json.dumps({"result": []}).encode(), {}
        if self.mode == "server_error":
            return 500, b"{}", {}
        obs = json.loads(body)
        row = obs["state"]["joint_positions"] + [HOME[7]]
        return 200, json.dumps({"actions": [row] * self.chunk_len}).encode(), {}


class FakeOpenPiServer:
    """mode: ok | slow | malformed | error_text | no_actions | huge (a 10^6-row actions
    array) | garbage (random bytes). `cycle`: one mode per connection, in turn."""

    def __init__(self, mode: str = "ok", chunk_len: int = 6, delay_s: float = 2.0, cycle: list[str] | None = None):
        self.mode, self.chunk_len, self.delay_s = mode, chunk_len, delay_s
        self.cycle, self.connections = list(cycle or []), 0
        self.requests: list[bytes] = []
        self.decoded: list[dict] = []
        self.server = serve(self._handler, "127.0.0.1", 0, compression=None, max_size=None)
        self.port = self.server.socket.getsockname()[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _handler(self, ws):
        if self.cycle:
            self.mode = self.cycle[self.connections % len(self.cycle)]
        self.connections += 1
        ws.send(msgpack_numpy.packb({"policy": "fake", "action_horizon": self.chunk_len}))
        try:
            self._serve(ws)
        except Exception:  # a client that refused a reply closed the connection
            pass

    def _serve(self, ws):
        for frame in ws:
            self.requests.append(frame)
            obs = msgpack_numpy.unpackb(frame)
            self.decoded.append(obs)
            if self.mode == "slow":
                time.sleep(self.delay_s)
            if self.mode == "malformed":
                ws.send(b"\xc1\xc1\xc1")  # 0xc1 is never valid msgpack
                continue
            if self.mode == "huge":
                ws.send(msgpack_numpy.packb({"actions": np.zeros((10**6, 8))}))
                continue
            if self.mode == "garbage":
                ws.send(np.random.default_rng(0).bytes(4096))
                continue
            if self.mode == "error_text":
                ws.send("Traceback: model exploded")
                continue
            if self.mode == "no_actions":
                ws.send(msgpack_numpy.packb({"server_timing": {"infer_ms": 1.0}}))
                continue
            row = np.concatenate([obs["observation/joint_position"], [HOME[7]]])
            ws.send(msgpack_numpy.packb({"actions": np.tile(row, (self.chunk_len, 1))}))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
