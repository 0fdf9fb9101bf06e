"""The policy observation is a whitelist; receipts identify what was delivered;
the leak check finds evaluator-only values in serialized requests."""
import json

import numpy as np
import pytest

from labference_ros.tasks.weighing.contract import weighing_basic
from labference_ros.core.observation import (EvaluatorSecrets, delivery_receipt, find_leaks,
                                             image_spans, project_observation, serialize_request)
from labference_ros.perception.display_decode import decode_display
from sim_observation import settled_observation


@pytest.fixture(scope="module")
def settled():
    return settled_observation()


def secrets_of(instance):
    return EvaluatorSecrets.of_instance(instance, weighing_basic().diagnostics.hidden_keys,
                                        legal=[f"add({s}->pan)" for s in instance.goal_set])


def source_of(obs):
    return {"observation_id": obs.observation_id, "episode_id": obs.episode_id,
            "sim_time": obs.sim_time, "evidence_version": obs.evidence_version,
            "images": obs.images, "instruction": obs.instruction,
            "joint_state": {**{f"panda_joint{i + 1}": q for i, q in enumerate(obs.joint_positions)},
                            "panda_finger_joint1": obs.gripper_width / 2,
                            "panda_finger_joint2": obs.gripper_width / 2}}


def test_projection_keeps_only_whitelisted_channels(settled):
    instance, obs, _ = settled
    src = source_of(obs)
    src.update({"world_state": {"std_50": [0.5, 0.1, 0.02]}, "sample_mass_g": instance.sample_mass_g,
                "goal_set": instance.goal_set, "instance_json": instance.to_json()})
    projected = project_observation(src)
    blob = serialize_request(projected)
    assert find_leaks(blob, secrets_of(instance), instance.public_instruction(),
                      image_spans(projected)) == []
    assert b"world_state" not in blob and b"instance_json" not in blob
    with pytest.raises(ValueError, match="unregistered"):
        project_observation(src, cameras=("front", "overhead"))


def test_display_pixels_carry_the_reading_but_no_field_does(settled):
    instance, obs, reading = settled
    # The evidence is there for a system that reads it ...
    assert decode_display(obs.images["display"]).value == reading.displayed_g
    assert abs(reading.displayed_g - instance.sample_mass_g) <= 0.1
    # ... but only as pixels: with the images exempted nothing is found.
    for enc in ("base64", "list"):
        blob = serialize_request(obs, enc)
        assert find_leaks(blob, secrets_of(instance), instance.public_instruction(),
                          image_spans(obs)) == []


@pytest.mark.parametrize("plant, what", [
    ({"note": "sample weighs 60.0 g"}, "sample_mass_g"),
    ({"m": 0.06}, "sample_mass_g"),
    ({"hint": "std_100"}, "required_standard"),
    ({"goal_set": []}, "hidden_key"),
    ({"ops": "add(std_100->pan)"}, "legal_set"),
])
def test_leak_check_finds_planted_values(settled, plant, what):
    instance, obs, _ = settled
    assert instance.sample_mass_g == 60.0 and instance.goal_set == ("std_100",)
    src = source_of(obs)
    src["history"] = [plant]  # history is authorized, so a runtime bug could leak through it
    leaky = project_observation(src)
    leaks = find_leaks(serialize_request(leaky), secrets_of(instance),
                       instance.public_instruction(), image_spans(leaky))
    assert what in {l.what for l in leaks}


def test_number_matching_respects_boundaries():
    secrets = EvaluatorSecrets(sample_mass_g=130.0)
    assert find_leaks(b'{"q":0.01300,"r":1130,"s":"x130","t":2130.5}', secrets) == []
    assert find_leaks(b'{"q":0.1300}', secrets)  # kilograms count too
    assert find_leaks(b'{"q":130}', secrets) and find_leaks(b'{"q":130.0}', secrets)
    assert find_leaks(np.float64(130.0).tobytes(), secrets)  # raw float64 in a binary request
    # A value the public instruction also names cannot be told apart from it.
    assert find_leaks(b"100 g", EvaluatorSecrets(100.0), public_text="the 100 g standard") == []


def test_delivery_receipt_identifies_the_evidence(settled):
    _, obs, _ = settled
    r = delivery_receipt(obs)
    assert r["observation_id"] == obs.observation_id and r["evidence_version"] == 1
    assert set(r["camera_stamps"]) == {"front", "wrist", "display"}
    assert r["image_shapes"]["front"] == [240, 320, 3]
    json.dumps(r)
    # The payload hash changes when any delivered pixel changes.
    images = dict(obs.images)
    images["wrist"] = images["wrist"].copy()
    images["wrist"][0, 0, 0] ^= 1
    changed = project_observation({**source_of(obs), "images": images})
    assert delivery_receipt(changed)["payload_sha256"] != r["payload_sha256"]


@pytest.mark.parametrize("cameras, instruction", [
    (("front", "wrist", "display"), "weigh the sample"),
    (('a"b', "\u00fc/\\"), 'quotes " and backslashes \\ and the stand-in\'s prefix image-data- in text'),
    ((), "no cameras at all"),
])
def test_the_payload_hash_is_the_sha256_of_the_serialized_request(settled, cameras, instruction):
    """payload_hash streams the images' base64 into the digest instead of encoding one
    JSON text: its digest must be the one a server can compute from what it received."""
    import dataclasses
    import hashlib

    from labference_ros.core.observation import payload_hash

    _, obs, _ = settled
    rng = np.random.default_rng(len(cameras))
    images = {c: rng.integers(0, 256, (12, 16, 3), dtype=np.uint8) for c in cameras}
    odd = dataclasses.replace(obs, images=images, image_stamps={c: 0.5 for c in cameras}, instruction=instruction,
                              history=({"note": "image-data-0"},))
    for candidate in (obs, odd):
        assert payload_hash(candidate) == hashlib.sha256(serialize_request(candidate)).hexdigest()


def test_the_commanded_setpoint_reaches_the_system_and_a_malformed_one_is_refused(settled):
    _, obs, _ = settled
    src = source_of(obs)
    assert project_observation(src).joint_setpoint is None  # nothing commanded yet
    assert json.loads(serialize_request(project_observation(src)))["state"]["joint_setpoint"] is None
    setpoint = obs.joint_positions + 0.05
    projected = project_observation({**src, "joint_setpoint": setpoint})
    assert np.array_equal(projected.restart_joint_positions, setpoint)
    assert json.loads(serialize_request(projected))["state"]["joint_setpoint"] == [float(x) for x in setpoint]
    for bad in (setpoint[:6], [float("nan")] * 7):
        with pytest.raises(ValueError, match="joint setpoint"):
            project_observation({**src, "joint_setpoint": bad})
