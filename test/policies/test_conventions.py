"""Declared conventions against a server's own description, and the latency log."""
from __future__ import annotations

import pytest

from labference_ros.core.action_spec import reference_joint_spec
from labference_ros.core.failures import error_kind
from labference_ros.policies.conventions import ConventionMismatch, check, mismatches
from labference_ros.policies.latency import LatencyLog
from labference_ros.policies.openpi_profiles import build_profile

SPEC = reference_joint_spec(50.0, 50)
ROBOARENA_CONFIG = {"image_resolution": [224, 224], "needs_wrist_camera": True, "n_external_cameras": 1,
                    "needs_stereo_camera": False, "needs_session_id": False, "action_space": "joint_position"}


def conventions_of(params):
    profile = build_profile(params, SPEC)
    return profile, profile.conventions()


def test_the_droid_profile_declares_droids_conventions():
    _, c = conventions_of({"profile": "droid"})
    assert c["action_space"] == "joint_velocity" and c["control_rate_hz"] == 15.0
    assert c["open_loop_horizon"] == 8 and c["gripper"] == "normalised_closed_1" and c["gripper_threshold"] == 0.5
    assert c["state"] == {"observation/joint_position": ["joint_position"],
                          "observation/gripper_position": ["gripper_closed_1"]}
    assert c["cameras"] == {"observation/exterior_image_1_left": ["front", "display"],
                            "observation/wrist_image_left": ["wrist"]}


def test_a_matching_roboarena_config_passes_and_each_difference_is_named():
    profile, c = conventions_of({"profile": "roboarena"})
    assert mismatches(c, ROBOARENA_CONFIG, profile.resize) == []
    other = {**ROBOARENA_CONFIG, "action_space": "joint_velocity", "n_external_cameras": 2,
             "image_resolution": [180, 320]}
    found = mismatches(c, other, profile.resize)
    assert found == ["action_space: server 'joint_velocity', profile 'joint_position'",
                     "n_external_cameras: server 2, profile 1",
                     "image_resolution: server [180, 320], profile [224, 224]"]
    with pytest.raises(ConventionMismatch) as err:
        check("roboarena", c, other, profile.resize)
    assert error_kind(str(err.value)) == "convention_mismatch"


def test_the_joint_velocity_roboarena_profile_agrees_with_a_velocity_server():
    profile, c = conventions_of({"profile": "roboarena", "action_space": "joint_velocity"})
    assert mismatches(c, {**ROBOARENA_CONFIG, "action_space": "joint_velocity"}, profile.resize) == []
    assert profile.actions.velocity_rule == "scale_vector"


def test_a_stock_openpi_server_states_nothing_and_is_not_contradicted():
    _, c = conventions_of({"profile": "libero"})
    assert mismatches(c, {}, [224, 224]) == []
    assert mismatches(c, {"action_dim": 7}, [224, 224]) == ["action_dim: server 7, profile 8"]
    assert mismatches(c, {"control_hz": 10}, [224, 224]) == ["control_hz: server 10, profile 50.0"]


def test_stereo_is_refused():
    profile, c = conventions_of({"profile": "roboarena"})
    assert mismatches(c, {**ROBOARENA_CONFIG, "needs_stereo_camera": True}, profile.resize) == [
        "needs_stereo_camera: server True, profile 'no stereo pair in the cell'"]


def test_latency_summary_counts_round_trips_and_server_timing():
    log = LatencyLog()
    assert log.summary() == {"requests": 0, "round_trip_s": None}
    log.add(0.1, {"infer_ms": 40.0})
    log.add(0.3, {"infer_ms": 60.0, "note": "x"})
    log.add(0.2, None)
    s = log.summary()
    assert s["requests"] == 3 and s["round_trip_s"]["max"] == pytest.approx(0.3)
    assert s["round_trip_s"]["p50"] == pytest.approx(0.2) and s["round_trip_s"]["total"] == pytest.approx(0.6)
    assert s["server_timing"] == {"infer_ms": {"mean": 50.0, "p50": 50.0, "p95": pytest.approx(59.0), "max": 60.0,
                                               "total": 100.0}}
    assert log.last == {"round_trip_s": 0.2}


def test_the_droid_server_in_the_wrong_profile_is_refused_at_reset_with_both_sides():
    from fake_droid import FakeDroidServer
    from labference_ros.policies import make

    with FakeDroidServer() as server:  # states action_space joint_velocity
        policy = make("openpi", spec=SPEC, port=server.port, profile="droid", action_space="joint_position")
        try:
            with pytest.raises(ConventionMismatch) as err:
                policy.reset("ep", 0)
        finally:
            policy.close()
        right = make("openpi", spec=SPEC, port=server.port, profile="droid")
        try:
            right.reset("ep", 0)  # the declared action space agrees
        finally:
            right.close()
    assert str(err.value) == ("convention mismatch with profile 'droid': action_space: server 'joint_velocity', "
                              "profile 'joint_position'")
    assert server.decoded == []


def test_malformed_metadata_values_are_mismatches_named_as_sent_not_crashes():
    profile, c = conventions_of({"profile": "roboarena"})
    bad = {**ROBOARENA_CONFIG, "n_external_cameras": "two", "image_resolution": 224}
    assert mismatches(c, bad, profile.resize) == ["n_external_cameras: server 'two', profile 1",
                                                  "image_resolution: server 224, profile [224, 224]"]
    odd = {**ROBOARENA_CONFIG, "n_external_cameras": None, "image_resolution": [224, "wide"]}
    assert mismatches(c, odd, profile.resize) == ["n_external_cameras: server None, profile 1",
                                                  "image_resolution: server [224, 'wide'], profile [224, 224]"]
    assert mismatches(c, {**ROBOARENA_CONFIG, "n_external_cameras": 1.0}, profile.resize) == []
