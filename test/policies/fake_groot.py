"""A stand-in for a GR00T N1.6/N1.7 policy server on 127.0.0.1, built from
the documented wire format with pyzmq and msgpack (this file's own codec,
not the project's): ZeroMQ REP; requests {"endpoint", "data", "api_token"};
numpy arrays as {"__ndarray_class__": True, "as_npy": .npy bytes};
ModalityConfig as {"__ModalityConfig_class__": True, "as_json": {...}};
endpoints ping, get_modality_config, reset, get_action -> [action, info];
errors as {"error": "..."}.

Its "model" is the project's display_reader (pixels only) on the exterior
view (front and display side by side), paced by the `timestamp` state key;
it answers absolute joint targets per 15 Hz step (`joint_position` [1, H, 7])
and the gripper closure 0..1 (`gripper_position` [1, H, 1]), float32."""
from __future__ import annotations

import io
import threading

import msgpack
import numpy as np
import zmq

from labference_ros.cell.description import weighing_cell
from labference_ros.core.action_spec import reference_joint_spec
from labference_ros.core.observation import PolicyObservation
from labference_ros.perception.camera import world_camera_calibration
from labference_ros.policies import make

OPEN_WIDTH_M = 0.08
VIDEO_KEYS = ["exterior_image_1_left", "wrist_image_left"]
STATE_KEYS = ["joint_position", "gripper_position", "timestamp"]
LANGUAGE_KEY = "annotation.language.language_instruction"
ACTION_KEYS = ["joint_position", "gripper_position"]


def _encode(obj):
    if isinstance(obj, np.ndarray):
        buf = io.BytesIO()
        np.save(buf, obj, allow_pickle=False)
        return {"__ndarray_class__": True, "as_npy": buf.getvalue()}
    return obj


def _decode(obj):
    if isinstance(obj, dict) and "__ndarray_class__" in obj:
        return np.load(io.BytesIO(obj["as_npy"]), allow_pickle=False)
    return obj


def modality(keys, steps=1):
    return {"__ModalityConfig_class__": True, "as_json": {"delta_indices": list(range(steps)), "modality_keys": keys}}


class FakeGrootServer:
    def __init__(self, horizon: int = 16, rate_hz: float = 15.0, video_keys=None, api_token: str | None = None):
        self.horizon, self.rate_hz, self.api_token = horizon, rate_hz, api_token
        self.config = {"video": modality(video_keys or VIDEO_KEYS), "state": modality(STATE_KEYS),
                       "language": modality([LANGUAGE_KEY]),
                       "action": modality(ACTION_KEYS, horizon)}
        self.endpoints: list[str] = []
        self.observations: list[dict] = []
        self.replies: list[np.ndarray] = []  # [H x 8]: joints, closure
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.REP)
        self.port = self.socket.bind_to_random_port("tcp://127.0.0.1")
        self.socket.setsockopt(zmq.RCVTIMEO, 200)
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.model = None

    def _serve(self):
        while self.running:
            try:
                message = self.socket.recv()
            except zmq.Again:
                continue
            request = msgpack.unpackb(message, object_hook=_decode)
            endpoint = request.get("endpoint", "get_action")
            self.endpoints.append(endpoint)
            if self.api_token is not None and request.get("api_token") != self.api_token:
                reply = {"error": "Unauthorized: Invalid API token"}
            elif endpoint == "ping":
                reply = {"status": "ok", "message": "Server is running"}
            elif endpoint == "get_modality_config":
                reply = self.config
            elif endpoint == "reset":
                self.model = make("display_reader", spec=reference_joint_spec(self.rate_hz, self.horizon))
                reply = {}
            elif endpoint == "get_action":
                reply = list(self._act(request["data"]["observation"]))
            else:
                reply = {"error": f"Unknown endpoint: {endpoint}"}
            self.socket.send(msgpack.packb(reply, default=_encode))

    def _act(self, obs: dict):
        self.observations.append(obs)
        composite = obs["video"]["exterior_image_1_left"][0, 0]
        half = composite.shape[1] // 2
        front, display = composite[:, :half], composite[:, half:]
        q = obs["state"]["joint_position"][0, 0].astype(np.float64)
        closure = float(obs["state"]["gripper_position"][0, 0, 0])
        calib = world_camera_calibration("front", front.shape[0], front.shape[1], weighing_cell()).to_dict()
        observation = PolicyObservation(
            observation_id=f"groot-{len(self.observations)}", episode_id="",
            sim_time=float(obs["state"]["timestamp"][0, 0, 0]), evidence_version=0,
            images={"front": front, "display": display, "wrist": obs["video"]["wrist_image_left"][0, 0]},
            image_stamps={}, joint_positions=q, gripper_width=OPEN_WIDTH_M * (1.0 - closure),
            instruction=obs["language"][LANGUAGE_KEY][0][0], camera_calibration={"front": calib})
        targets = np.asarray(self.model.act(observation), dtype=np.float64)
        targets = np.vstack([targets, np.repeat(targets[-1:], self.horizon - len(targets), axis=0)])
        rows = np.column_stack([targets[:, :7], 1.0 - targets[:, 7] / OPEN_WIDTH_M]).astype(np.float32)
        self.replies.append(rows.astype(np.float64))
        action = {"joint_position": rows[None, :, :7], "gripper_position": rows[None, :, 7:]}
        return action, {"inference_ms": 3.0}

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.running = False
        self.thread.join(timeout=5)
        self.socket.close(linger=0)
        self.context.term()
