"""OpenPI request profiles: keys, dtypes, shapes, resize, composites and
nesting as the server decodes them with openpi-client's own modules; the
reply conventions against the DROID-like stand-in; API key headers."""
import json

import numpy as np
import pytest
from openpi_client import image_tools, msgpack_numpy as openpi_msgpack

from labference_ros.core.action_spec import REJECTED, reference_joint_spec
from labference_ros.policies import EvaluationValidityError, make
from labference_ros.policies.openpi_profiles import ProfileError, build_profile, resize_with_pad
from labference_ros.policies import msgpack_numpy
from fake_droid import FakeDroidServer
from sim_observation import settled_observation
from test_remote_policies import assert_no_leaks

REF = reference_joint_spec(50.0, 50)


@pytest.fixture(scope="module")
def settled():
    return settled_observation()


def wire(profile_params, obs):
    """The request as a server decodes it with openpi-client."""
    profile = build_profile(profile_params, REF)
    return profile, openpi_msgpack.unpackb(msgpack_numpy.packb(profile.request.build(obs)))


def test_droid_request_layout(settled):
    _, obs, _ = settled
    profile, req = wire({"profile": "droid"}, obs)
    assert sorted(req) == ["observation/exterior_image_1_left", "observation/gripper_position",
                           "observation/joint_position", "observation/wrist_image_left", "prompt"]
    ext, wrist = req["observation/exterior_image_1_left"], req["observation/wrist_image_left"]
    assert ext.shape == wrist.shape == (224, 224, 3) and ext.dtype == wrist.dtype == np.uint8
    # resize-with-pad exactly as openpi-client's image_tools does it
    assert np.array_equal(wrist, image_tools.resize_with_pad(obs.images["wrist"], 224, 224))
    assert req["observation/joint_position"].dtype == np.float64
    assert np.array_equal(req["observation/joint_position"], obs.joint_positions)
    g = req["observation/gripper_position"]
    assert g.shape == (1,) and g[0] == pytest.approx(1.0 - obs.gripper_width / 0.08)
    assert req["prompt"] == obs.instruction
    # the display reaches the model as an inset of the front view, and the record says so
    slot = profile.describe()["request"]["images"][0]
    assert slot["cameras"] == ["front", "display"] and slot["composite"] == "inset"
    assert profile.describe()["actions"]["native_action_spec"]["mode"] == "velocity"


def test_inset_composite_places_the_scaled_display_in_the_corner(settled):
    _, obs, _ = settled
    _, req = wire({"profile": "droid", "resize": None, "inset": {"scale": 0.5, "corner": "top_left"}}, obs)
    ext = req["observation/exterior_image_1_left"]
    assert ext.shape == obs.images["front"].shape
    assert np.array_equal(ext[120:, :], obs.images["front"][120:, :])  # outside the inset: the front view
    dh, dw = obs.images["display"].shape[:2]
    iw = round(120 * dw / dh)  # the inset keeps the display's aspect ratio
    assert np.array_equal(ext[:120, :iw], image_tools.resize_with_pad(obs.images["display"], 120, iw))
    assert np.array_equal(ext[:120, iw:], obs.images["front"][:120, iw:])


def test_side_by_side_composite(settled):
    _, obs, _ = settled
    _, req = wire({"profile": "droid", "resize": None,
                   "images": {"observation/exterior_image_1_left": "front|display",
                              "observation/wrist_image_left": "wrist"}}, obs)
    ext = req["observation/exterior_image_1_left"]
    dh, dw = obs.images["display"].shape[:2]
    dw = round(dw * 240 / dh)  # the display scaled to the front view's height
    assert ext.shape == (240, 320 + dw, 3)
    assert np.array_equal(ext[:, :320], obs.images["front"])
    assert np.array_equal(ext[:, 320:], image_tools.resize_with_pad(obs.images["display"], 240, dw))


def test_libero_state_concatenation(settled):
    _, obs, _ = settled
    profile, req = wire({"profile": "libero", "state_dtype": "float32"}, obs)
    assert sorted(req) == ["observation/image", "observation/state", "observation/wrist_image", "prompt"]
    state = req["observation/state"]
    assert state.shape == (8,) and state.dtype == np.float32
    assert np.allclose(state, np.concatenate([obs.joint_positions, [obs.gripper_width]]), atol=1e-6)
    assert req["observation/image"].shape == (224, 224, 3)
    assert profile.actions.identity  # replies in the project's joint-position convention


def test_aliased_nested_chw_layout(settled):
    _, obs, _ = settled
    params = {"profile": "aliased", "nested_separator": ".", "image_layout": "CHW",
              "images": {"images.cam_high": "front", "images.cam_left_wrist": "wrist"},
              "drop_cameras": ["display"], "state": {"state": ["joint_position", "gripper_closed_1"]}}
    profile, req = wire(params, obs)
    assert sorted(req) == ["images", "prompt", "state"]
    assert sorted(req["images"]) == ["cam_high", "cam_left_wrist"]
    high = req["images"]["cam_high"]
    assert high.shape == (3, 240, 320) and high.dtype == np.uint8
    assert np.array_equal(high.transpose(1, 2, 0), obs.images["front"])
    assert req["state"].shape == (8,)
    desc = profile.describe()["request"]
    assert desc["dropped_cameras"] == ["display"] and desc["images"][0]["key"] == ["images", "cam_high"]


def test_joint_position_profile_keeps_the_legacy_keys(settled):
    _, obs, _ = settled
    _, req = wire({"keys": {"display": "observation/balance_display", "prompt": "task"}}, obs)
    assert np.array_equal(req["observation/balance_display"], obs.images["display"])
    assert req["task"] == obs.instruction and "prompt" not in req
    assert req["observation/gripper_position"][0] == pytest.approx(obs.gripper_width)


@pytest.mark.parametrize("params, message", [
    ({"profile": "pi_zero"}, "unknown OpenPI profile"),
    ({"profile": "droid", "images": {"observation/exterior_image_1_left": "front",
                                     "observation/wrist_image_left": "wrist"}}, r"\['display'\] fill no image slot"),
    ({"profile": "droid", "images": {"a": "front+sky", "b": "wrist"}}, "unknown camera"),
    ({"profile": "aliased"}, "needs `images`"),
    ({"profile": "libero", "state": {"observation/state": ["eef_pose"]}}, "unknown field"),
    ({"profile": "droid", "image_layout": "WHC"}, "image layout"),
    ({"profile": "droid", "actions": {"arm": "torque"}}, "arm convention"),
    ({"profile": "aliased", "nested_separator": ".", "images": {"a": "front", "a.b": "wrist+display"}},
     "both a value and a parent"),
])
def test_bad_profiles_name_the_cause(params, message):
    with pytest.raises(ProfileError, match=message):
        build_profile(params, REF)
    with pytest.raises(ValueError, match=message):  # as the bridge meets it
        make("openpi", spec=REF, **params)


def test_resize_with_pad_matches_openpi_client():
    img = np.random.default_rng(0).integers(0, 255, (240, 320, 3), dtype=np.uint8)
    for h, w in [(224, 224), (100, 300), (240, 320)]:
        assert np.array_equal(resize_with_pad(img, h, w), image_tools.resize_with_pad(img, h, w))


DROID_TEST = {"profile": "droid", "resize": None, "extra": {"observation/timestamp": "sim_time"},
              "images": {"observation/exterior_image_1_left": "front|display", "observation/wrist_image_left": "wrist"}}


def test_droid_server_round_trip_with_api_key(settled, monkeypatch):
    instance, obs, _ = settled
    monkeypatch.setenv("LABF_TEST_PI_KEY", "sk-test-4f1d9c")
    with FakeDroidServer(api_key="sk-test-4f1d9c") as server:
        policy = make("openpi", spec=REF, port=server.port, api_key_env="LABF_TEST_PI_KEY", **DROID_TEST)
        policy.reset("s", 0)
        chunk = policy.act(obs)
        profile = policy.profile()
        policy.close()
    assert server.authorization == ["Api-Key sk-test-4f1d9c"]
    assert chunk.shape[1] == 8
    current = np.concatenate([obs.joint_positions, [obs.gripper_width]])
    verdict = policy.action_conversion.validate(chunk, 1, 1, current)
    assert verdict.accepted, verdict.reasons
    assert profile["openpi"]["server_metadata"] == server.metadata
    assert profile["params"]["api_key_env"] == "LABF_TEST_PI_KEY"
    assert "sk-test-4f1d9c" not in json.dumps(profile)
    for body in server.requests:
        assert_no_leaks(body, instance, obs)


def test_missing_api_key_variable_is_a_validity_error(settled, monkeypatch):
    monkeypatch.delenv("LABF_TEST_PI_KEY", raising=False)
    policy = make("openpi", spec=REF, port=1, api_key_env="LABF_TEST_PI_KEY", **DROID_TEST)
    with pytest.raises(EvaluationValidityError, match="'LABF_TEST_PI_KEY', which is not set"):
        policy.reset("s", 0)


def test_wrong_api_key_is_a_validity_error(settled, monkeypatch):
    monkeypatch.setenv("LABF_TEST_PI_KEY", "sk-wrong-77aa")
    with FakeDroidServer(api_key="sk-right") as server:
        policy = make("openpi", spec=REF, port=server.port, api_key_env="LABF_TEST_PI_KEY", timeout_s=2.0,
                      **DROID_TEST)
        with pytest.raises(EvaluationValidityError) as err:
            policy.reset("s", 0)
        policy.close()
    assert "sk-wrong-77aa" not in str(err.value)


@pytest.mark.parametrize("mode, outcome", [("no_actions", "no 'actions'"), ("wrong_shape", "native: dimension 7 != 8"),
                                           ("nan", "native: 1 non-finite values")])
def test_malformed_droid_replies(settled, mode, outcome):
    _, obs, _ = settled
    with FakeDroidServer(mode=mode) as server:
        policy = make("openpi", spec=REF, port=server.port, **DROID_TEST)
        policy.reset("s", 0)
        if mode == "no_actions":  # nothing to check: the evaluation itself failed
            with pytest.raises(EvaluationValidityError, match=outcome):
                policy.act(obs)
            policy.close()
            return
        chunk = policy.act(obs)
        policy.close()
    verdict = policy.action_conversion.validate(chunk, 1, 1, obs.robot_state)
    assert verdict.status == REJECTED and verdict.reasons[0].startswith(outcome)
    json.dumps(verdict.record())


def test_launch_refuses_a_bad_profile_before_anything_starts():
    from labference_ros.launcher.arguments import LaunchArgumentError
    from labference_ros.launcher.launch import launch

    bad = json.dumps({"profile": "droid", "images": {"observation/exterior_image_1_left": "front"}})
    with pytest.raises(LaunchArgumentError, match=r"system_params of system 'openpi' refused: openpi: "
                                                  r"camera\(s\) \['wrist', 'display'\] fill no"):
        launch("weighing_sim.launch.py", ["system:=openpi", f"system_params:={bad}"])
