"""Remote replies are bounded before they are parsed: a 10^6-row chunk from an
HTTP or OpenPI server on loopback is refused as an evaluation-validity error
from its size alone, whatever the transport says about its length."""

import pytest

from labference_ros.policies import EvaluationValidityError, make
from labference_ros.policies.limits import DEFAULT_MAX_REPLY_BYTES, ReplyTooLarge
from fake_servers import FakeHttpPolicy, FakeOpenPiServer
from sim_observation import settled_observation


@pytest.fixture(scope="module")
def obs():
    return settled_observation()[1]


@pytest.mark.parametrize("mode", ["huge", "huge_undeclared"])
def test_http_huge_reply_is_refused_by_its_size(obs, mode):
    with FakeHttpPolicy(mode=mode) as server:
        policy = make("http", url=server.url, timeout_s=30)
        policy.reset("s", 0)
        with pytest.raises(ReplyTooLarge, match=r"reply too large: .*limit of 1048576 bytes \(max_reply_bytes\)"):
            policy.act(obs)
    assert len(server.huge) > 50 * DEFAULT_MAX_REPLY_BYTES  # the reply really was that large (55 MB)
    assert issubclass(ReplyTooLarge, EvaluationValidityError)


def test_http_row_limit_is_checked_before_the_array(obs):
    with FakeHttpPolicy(chunk_len=51) as server:
        policy = make("http", url=server.url)
        policy.reset("s", 0)
        with pytest.raises(ReplyTooLarge, match=r"51 action rows over the limit of 50 \(max_reply_rows\)"):
            policy.act(obs)
        # The limits are system parameters, recorded in the profile.
        wide = make("http", url=server.url, max_reply_rows=60)
        wide.reset("s", 0)
        assert wide.act(obs).shape == (51, 8)
        assert wide.profile()["params"]["max_reply_rows"] == 60


def test_openpi_huge_frame_is_refused_from_its_header(obs):
    with FakeOpenPiServer(mode="huge") as server:
        policy = make("openpi", port=server.port, timeout_s=30)
        policy.reset("s", 0)
        with pytest.raises(ReplyTooLarge, match=r"frame over the limit of 1048576 bytes"):
            policy.act(obs)
        policy.close()


def test_openpi_row_and_array_limits(obs):
    with FakeOpenPiServer(chunk_len=51) as server:
        policy = make("openpi", port=server.port)
        policy.reset("s", 0)
        with pytest.raises(ReplyTooLarge, match=r"51 action rows over the limit of 50"):
            policy.act(obs)
        policy.close()
    # A msgpack array longer than rows x 64 is refused while decoding.
    from labference_ros.policies import msgpack_numpy
    with pytest.raises(ValueError, match="exceeds max_array_len"):
        msgpack_numpy.unpackb(msgpack_numpy.packb({"actions": [0.0] * 5000}), max_array_len=50 * 64)


def test_openpi_garbage_frame_is_a_validity_error(obs):
    with FakeOpenPiServer(mode="garbage") as server:
        policy = make("openpi", port=server.port)
        policy.reset("s", 0)
        with pytest.raises(EvaluationValidityError, match="OpenPI"):
            policy.act(obs)
        policy.close()
