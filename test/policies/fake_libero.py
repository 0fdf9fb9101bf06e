"""A stand-in for a stock pi0/pi0.5 LIBERO policy server on 127.0.0.1, built
on openpi-client's own serialisation (openpi_client.msgpack_numpy).

Like OpenPI's LIBERO policy it reads observation/image,
observation/wrist_image, observation/state and prompt, and answers
{"actions": [H x 7]}: an end-effector delta (3 translation, 3 axis-angle
rotation) and a gripper command (-1 open, +1 close), LIBERO's convention.
Its "model" either sends a fixed delta per row (`delta`) or, with `rise_m`,
moves the hand straight up by that much from where it first saw it (at
most 0.01 m per step, read from observation/state), gripper open, so the
test can check what reached the arm."""
from __future__ import annotations

import threading

import numpy as np
from openpi_client import msgpack_numpy as openpi_msgpack
from websockets.sync.server import serve


class FakeLiberoServer:
    def __init__(self, chunk_len: int = 10, delta=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0), metadata: dict | None = None,
                 rise_m: float | None = None):
        self.chunk_len, self.rise_m = chunk_len, rise_m
        self.target_z: float | None = None
        self.delta = np.asarray(delta, dtype=np.float64)
        self.metadata = metadata if metadata is not None else {}  # stock servers send no action space
        self.decoded: list[dict] = []
        self.replies: list[np.ndarray] = []
        self.server = serve(self._handler, "127.0.0.1", 0, compression=None, max_size=None)
        self.port = self.server.socket.getsockname()[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _handler(self, ws):
        ws.send(openpi_msgpack.packb(self.metadata))
        for frame in ws:
            obs = openpi_msgpack.unpackb(frame)
            self.decoded.append(obs)
            actions = np.tile(np.concatenate([self.delta, [-1.0]]), (self.chunk_len, 1))
            if self.rise_m is not None:
                z = float(obs["observation/state"][2])
                self.target_z = z + self.rise_m if self.target_z is None else self.target_z
                for row in actions:  # at most 0.01 m per step toward the target
                    step = float(np.clip(self.target_z - z, -0.01, 0.01))
                    row[2] = step / 0.05  # LIBERO's scale: 1 = 0.05 m
                    z += step
            self.replies.append(actions)
            ws.send(openpi_msgpack.packb({"actions": actions, "server_timing": {"infer_ms": 2.0}}))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
