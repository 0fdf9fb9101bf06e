"""HTTP and OpenPI adapters against stand-in servers on loopback: real
requests, decoded replies, transport failures as EvaluationValidityError,
and no evaluator-only value in any request that crossed the wire."""
import json

import numpy as np
import pytest

from labference_ros.core.action_spec import validate_chunk
from labference_ros.tasks.weighing.contract import weighing_basic
from labference_ros.core.observation import EvaluatorSecrets, find_leaks, image_spans
from labference_ros.policies import EvaluationValidityError, make
from labference_ros.policies import msgpack_numpy
from fake_servers import FakeHttpPolicy, FakeOpenPiServer, free_port
from sim_observation import settled_observation


@pytest.fixture(scope="module")
def settled():
    return settled_observation()


def assert_no_leaks(blob, instance, obs):
    secrets = EvaluatorSecrets.of_instance(instance, weighing_basic().diagnostics.hidden_keys,
                                           legal=[f"add({s}->pan)" for s in instance.goal_set])
    leaks = find_leaks(blob, secrets, instance.public_instruction(), image_spans(obs))
    assert leaks == [], leaks


@pytest.mark.parametrize("encoding", ["base64", "list"])
def test_http_round_trip(settled, encoding):
    instance, obs, _ = settled
    with FakeHttpPolicy() as server:
        policy = make("http", url=server.url, image_encoding=encoding, timeout_s=10)
        policy.reset("session-1", 7)
        chunk = policy.act(obs)
        assert chunk.shape == (4, 8)
        assert validate_chunk(policy.spec, chunk, 1, 1).accepted
        paths = [p for p, _ in server.requests]
        assert paths == ["/reset", "/act"]
        assert json.loads(server.requests[0][1]) == {"session_id": "session-1", "policy_seed": 7}
        req = json.loads(server.requests[1][1])
        assert req["session_id"] == "session-1" and req["instruction"] == obs.instruction
        front = req["images"]["front"]
        assert front["shape"] == [240, 320, 3]
        for path, body in server.requests:  # every request that crossed the boundary
            assert_no_leaks(body, instance, obs)
    assert policy.profile()["params"]["url"] == server.url


@pytest.mark.parametrize("mode, message", [
    ("malformed", "malformed JSON"), ("no_actions", "no 'actions'"), ("server_error", "HTTP 500"),
    ("slow", "timed out after 0.3 s"),
])
def test_http_failures_are_validity_errors(settled, mode, message):
    _, obs, _ = settled
    with FakeHttpPolicy(mode=mode, delay_s=1.0) as server:
        policy = make("http", url=server.url, timeout_s=0.3)
        policy.reset("s", 0)
        with pytest.raises(EvaluationValidityError, match=message):
            policy.act(obs)


def test_http_connection_refused_is_a_validity_error(settled):
    policy = make("http", url=f"http://127.0.0.1:{free_port()}", reset_path="")
    policy.reset("s", 0)
    with pytest.raises(EvaluationValidityError, match=r"unreachable \(connection refused\)"):
        policy.act(settled[1])


def test_msgpack_numpy_matches_the_openpi_encoding():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    raw = msgpack_numpy.packb({"x": a})
    import msgpack
    plain = msgpack.unpackb(raw, raw=False)
    enc = plain["x"]
    assert enc[b"__ndarray__"] is True and enc[b"dtype"] == "<f4" and list(enc[b"shape"]) == [2, 3]
    assert enc[b"data"] == a.tobytes()
    assert np.array_equal(msgpack_numpy.unpackb(raw)["x"], a)


def test_openpi_round_trip(settled):
    instance, obs, _ = settled
    with FakeOpenPiServer() as server:
        policy = make("openpi", port=server.port)
        policy.reset("session-1", 0)
        assert policy.server_metadata == {"policy": "fake", "action_horizon": 6}
        chunk = policy.act(obs)
        chunk2 = policy.act(obs)
        policy.close()
        assert chunk.shape == (6, 8) and np.array_equal(chunk, chunk2)
        assert np.allclose(chunk[0, :7], obs.joint_positions)
        sent = server.decoded[0]
        assert sent["prompt"] == obs.instruction
        img = sent["observation/exterior_image_1_left"]
        assert img.dtype == np.uint8 and np.array_equal(img, obs.images["front"])
        assert np.array_equal(sent["observation/wrist_image_left"], obs.images["wrist"])
        assert len(server.requests) == 2
        for body in server.requests:
            assert_no_leaks(body, instance, obs)


@pytest.mark.parametrize("mode, message", [
    ("malformed", "not valid msgpack"), ("error_text", "model exploded"),
    ("no_actions", "no 'actions'"), ("slow", "timed out after 0.3 s"),
])
def test_openpi_failures_are_validity_errors(settled, mode, message):
    _, obs, _ = settled
    with FakeOpenPiServer(mode=mode, delay_s=1.0) as server:
        policy = make("openpi", port=server.port, timeout_s=0.3)
        policy.reset("s", 0)
        with pytest.raises(EvaluationValidityError, match=message):
            policy.act(obs)
        policy.close()


def test_openpi_connection_refused_is_a_validity_error():
    policy = make("openpi", port=free_port(), open_timeout_s=1.0)
    with pytest.raises(EvaluationValidityError, match="unreachable .connection refused."):
        policy.reset("s", 0)
