"""A stand-in for an OpenPI DROID policy server on 127.0.0.1, built on
openpi-client's own serialisation (openpi_client.msgpack_numpy).

Like OpenPI's DROID policy it reads observation/exterior_image_1_left,
observation/wrist_image_left, observation/joint_position,
observation/gripper_position (0..1, 1 = closed) and prompt, and answers
{"actions": [H x 8]}: 7 joint velocities, one row per 15 Hz step, normalised
so that 1 = 0.2 rad per step (3 rad/s, DROID's RobotIKSolver) and the
gripper position.

With `roboarena=True` it speaks RoboArena's variant of the protocol: its
PolicyServerConfig goes first, each request carries `endpoint` ("reset"
answered with the text "reset successful", or "infer") and `session_id`
when the config asks for it, and the reply is the action array itself.
`action_space="joint_position"` answers absolute joint targets per step.

Its "model" is the project's display_reader (pixels only): the exterior slot
carries the front view and the balance display side by side ("front|display"),
and the plan is replayed by the observation's sim time, which the test's
profile sends as an extra key (a real DROID server ignores keys it does not
read). Its absolute targets are turned into DROID velocities with this
file's own arithmetic, not the project's conversion code.
"""
from __future__ import annotations

import threading

import numpy as np
from openpi_client import msgpack_numpy as openpi_msgpack
from websockets.sync.server import serve

from labference_ros.cell.description import weighing_cell
from labference_ros.core.action_spec import reference_joint_spec
from labference_ros.core.observation import PolicyObservation
from labference_ros.policies import make
from labference_ros.perception.camera import world_camera_calibration

OPEN_WIDTH_M = 0.08
TIME_KEY = "observation/timestamp"


def droid_actions(targets: np.ndarray, q: np.ndarray, rate_hz: float, scale_rad_s: float) -> np.ndarray:
    """Absolute rows (7 joints rad, width m) -> DROID rows from state q."""
    steps = np.diff(np.vstack([q[None, :], targets[:, :7]]), axis=0)
    velocity = steps * rate_hz / scale_rad_s
    closure = 1.0 - targets[:, 7] / OPEN_WIDTH_M
    return np.column_stack([velocity, closure])


class FakeDroidServer:
    """mode: ok | no_actions | wrong_shape | nan."""

    def __init__(self, rate_hz: float = 15.0, chunk_len: int = 10, api_key: str | None = None,
                 mode: str = "ok", metadata: dict | None = None, velocity_scale_rad_s: float = 3.0,
                 action_space: str = "joint_velocity", roboarena: bool = False):
        self.rate_hz, self.chunk_len, self.api_key, self.mode = rate_hz, chunk_len, api_key, mode
        self.velocity_scale_rad_s = velocity_scale_rad_s
        self.action_space, self.roboarena = action_space, roboarena
        if roboarena:  # RoboArena's PolicyServerConfig, as its server sends it (dataclasses.asdict)
            default = {"image_resolution": None, "needs_wrist_camera": True, "n_external_cameras": 1,
                       "needs_stereo_camera": False, "needs_session_id": True, "action_space": action_space}
        else:
            default = {"policy": "fake_droid", "action_horizon": chunk_len, "action_space": action_space}
        self.metadata = metadata or default
        self.resets: list[dict] = []
        self.requests: list[bytes] = []
        self.decoded: list[dict] = []
        self.replies: list[np.ndarray] = []
        self.authorization: list[str | None] = []
        self.server = serve(self._handler, "127.0.0.1", 0, compression=None, max_size=None)
        self.port = self.server.socket.getsockname()[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _handler(self, ws):
        auth = ws.request.headers.get("Authorization")
        self.authorization.append(auth)
        if self.api_key is not None and auth != f"Api-Key {self.api_key}":
            ws.close(code=1008, reason="bad api key")
            return
        ws.send(openpi_msgpack.packb(self.metadata))
        spec = reference_joint_spec(self.rate_hz, self.chunk_len)
        model = make("display_reader", spec=spec)  # a fresh connection is a fresh session
        for frame in ws:
            obs = openpi_msgpack.unpackb(frame)
            if self.roboarena:
                endpoint = obs.pop("endpoint")
                if endpoint == "reset":
                    self.resets.append(obs)
                    model = make("display_reader", spec=spec)
                    ws.send("reset successful")
                    continue
            self.requests.append(frame)
            self.decoded.append(obs)
            if self.mode == "no_actions":
                ws.send(openpi_msgpack.packb({"server_timing": {"infer_ms": 1.0}}))
                continue
            actions = self._act(model, obs)
            if self.mode == "wrong_shape":
                actions = actions[:, :7]
            elif self.mode == "nan":
                actions[0, 3] = np.nan
            self.replies.append(actions)
            if self.roboarena:
                ws.send(openpi_msgpack.packb(actions))
            else:
                ws.send(openpi_msgpack.packb({"actions": actions, "server_timing": {"infer_ms": 1.0}}))

    def _act(self, model, req: dict) -> np.ndarray:
        composite = req["observation/exterior_image_1_left"]
        half = composite.shape[1] // 2
        front, display = composite[:, :half], composite[:, half:]
        q = np.asarray(req["observation/joint_position"], dtype=np.float64)
        closure = float(req["observation/gripper_position"][0])
        calib = world_camera_calibration("front", front.shape[0], front.shape[1], weighing_cell()).to_dict()
        obs = PolicyObservation(
            observation_id=f"droid-{len(self.requests)}", episode_id="", sim_time=float(req[TIME_KEY][0]),
            evidence_version=0, images={"front": front, "display": display,
                                        "wrist": req["observation/wrist_image_left"]},
            image_stamps={}, joint_positions=q, gripper_width=OPEN_WIDTH_M * (1.0 - closure),
            instruction=req["prompt"], camera_calibration={"front": calib})
        targets = np.asarray(model.act(obs), dtype=np.float64)
        if len(targets) < self.chunk_len:  # a model's chunk has its own length: the last target held
            targets = np.vstack([targets, np.repeat(targets[-1:], self.chunk_len - len(targets), axis=0)])
        if self.action_space == "joint_position":
            return np.column_stack([targets[:, :7], 1.0 - targets[:, 7] / OPEN_WIDTH_M])
        return droid_actions(targets, q, self.rate_hz, self.velocity_scale_rad_s)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
