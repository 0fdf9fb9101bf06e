"""The GR00T client's wire format and failures, against the stand-in on loopback."""
from __future__ import annotations

import io

import msgpack
import numpy as np
import pytest

from fake_groot import FakeGrootServer
from fake_servers import free_port
from labference_ros.core.system import EvaluationValidityError
from labference_ros.policies import groot_wire, make


def test_arrays_travel_as_npy_and_modality_configs_as_maps():
    a = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    back = groot_wire.unpackb(groot_wire.packb({"x": a, "n": np.int64(3)}))
    assert back["x"].dtype == np.float32 and np.array_equal(back["x"], a) and back["n"] == 3
    config = msgpack.packb({"__ModalityConfig_class__": True, "as_json": {"modality_keys": ["k"]}})
    assert groot_wire.unpackb(config) == {"modality_keys": ["k"]}


def test_an_array_that_needs_pickle_is_refused():
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    frame = msgpack.packb({"__ndarray_class__": True, "as_npy": buf.getvalue()})
    with pytest.raises(groot_wire.WireError, match="objects would need pickle"):
        groot_wire.unpackb(frame)


def test_a_wrong_api_token_is_the_servers_error(monkeypatch):
    monkeypatch.setenv("LABF_TEST_GROOT_TOKEN", "wrong")
    with FakeGrootServer(api_token="right") as server:
        policy = make("groot", port=server.port, api_token_env="LABF_TEST_GROOT_TOKEN")
        try:
            with pytest.raises(EvaluationValidityError, match=r"GR00T server error \(ping\): Unauthorized"):
                policy.reset("ep", 0)
        finally:
            policy.close()


def test_no_server_times_out_with_a_named_cause():
    policy = make("groot", port=free_port(), timeout_s=0.3)
    try:
        with pytest.raises(EvaluationValidityError,
                           match=r"timed out after 0.3 s \(ping; or its reply was over max_reply_bytes"):
            policy.reset("ep", 0)
    finally:
        policy.close()


def test_an_unmapped_camera_is_refused_at_construction():
    with pytest.raises(ValueError, match="fill no video key"):
        make("groot", video={"wrist_image_left": "wrist"})


class _OddReplies(FakeGrootServer):
    """A server whose get_action reply is well framed but not numbers: string rows (a
    .npy without pickle can carry them) and an info that is an array, not a map."""

    def _act(self, obs: dict):
        self.observations.append(obs)
        words = np.full((1, self.horizon, 7), "up", dtype="<U2")
        return {"joint_position": words, "gripper_position": np.zeros((1, self.horizon, 1))}, np.arange(3)


def _observation():
    from labference_ros.core.observation import PolicyObservation

    image = np.zeros((24, 32, 3), dtype=np.uint8)
    return PolicyObservation(observation_id="o1", episode_id="ep", sim_time=0.0, evidence_version=0,
                             images={"front": image, "display": image, "wrist": image}, image_stamps={},
                             joint_positions=np.zeros(7), gripper_width=0.08, instruction="weigh",
                             camera_calibration={})


def test_a_reply_of_strings_is_a_named_error_not_a_crash():
    with _OddReplies() as server:
        policy = make("groot", port=server.port, timeout_s=5.0,
                      video={"exterior_image_1_left": "front|display", "wrist_image_left": "wrist"},
                      state={"joint_position": ["joint_position"], "gripper_position": ["gripper_closed_1"],
                             "timestamp": ["sim_time"]})
        try:
            policy.reset("ep", 0)
            with pytest.raises(EvaluationValidityError, match="'joint_position' is not numeric"):
                policy.act(_observation())
        finally:
            policy.close()
