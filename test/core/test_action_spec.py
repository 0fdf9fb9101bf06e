"""Every returned chunk is checked against the ActionSpec before it moves the robot."""
import math

import numpy as np
import pytest

from labference_ros.core.action_spec import (ACCEPTED, CLIPPED, REJECTED, STALE, ActionSpec,
                                             reference_joint_spec, validate_chunk)

HOME = [0.0, 0.0, 0.0, -1.57079, 0.0, 1.57079, -0.7853, 0.08]


@pytest.fixture
def spec():
    return reference_joint_spec(control_frequency_hz=50.0, max_chunk_length=10)


def chunk(n=5, **overrides):
    a = np.tile(np.array(HOME, float), (n, 1))
    for (r, c), v in overrides.get("set", {}).items():
        a[r, c] = v
    return a


def test_reference_spec_declares_its_interface(spec):
    assert spec.dim == 8 and spec.representation == "joint" and spec.mode == "absolute"
    assert spec.units == ("rad",) * 7 + ("m",)
    assert spec.limit_handling == ("reject",) * 7 + ("clip",)
    assert spec.hold_interval_s == pytest.approx(0.02)
    assert ActionSpec.from_dict(spec.to_dict()) == spec
    # Gripper convention: below the threshold is a grasp with the declared force.
    assert spec.gripper.command(0.03) == {"grasp": True, "width": 0.03, "speed": 0.1, "force": 10.0,
                                          "epsilon_inner": 0.005, "epsilon_outer": 0.005}
    assert spec.gripper.command(0.06)["grasp"] is False


def test_good_chunk_is_accepted_unchanged(spec):
    v = validate_chunk(spec, chunk(), evidence_version=3, latest_evidence_version=3)
    assert v.status == ACCEPTED and v.accepted and v.reasons == []
    assert np.array_equal(v.applied, v.requested)
    # A single action is a chunk of length one.
    assert validate_chunk(spec, HOME, 0, 0).applied.shape == (1, 8)


@pytest.mark.parametrize("bad, reason", [
    (np.zeros((5, 7)), "dimension 7 != 8"),
    (np.zeros((0, 8)), "empty chunk"),
    (np.zeros((11, 8)), "length 11 exceeds the maximum 10"),
    (np.zeros((2, 3, 8)), "must be [L x 8]"),
    ("not numbers", "not numeric"),
])
def test_malformed_chunks_are_rejected(spec, bad, reason):
    v = validate_chunk(spec, bad, 0, 0)
    assert v.status == REJECTED and v.applied is None
    assert any(reason in r for r in v.reasons), v.reasons


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_values_are_rejected(spec, value):
    v = validate_chunk(spec, chunk(set={(2, 4): value}), 0, 0)
    assert v.status == REJECTED and "row 2 (panda_joint5)" in v.reasons[0]
    rec = v.record()  # the log stays valid JSON-able data
    assert rec["requested"][2][4] == repr(value) and rec["applied"] is None


def test_arm_beyond_panda_limits_is_rejected_not_clipped(spec):
    v = validate_chunk(spec, chunk(set={(1, 3): 0.0}), 0, 0)  # joint4 must stay below -0.0698
    assert v.status == REJECTED
    assert "panda_joint4 = 0.0000 at row 1 outside [-3.0718, -0.0698] rad" in v.reasons[0]


def test_gripper_width_is_clipped_and_logged(spec):
    v = validate_chunk(spec, chunk(set={(0, 7): 0.12, (1, 7): -0.01}), 0, 0)
    assert v.status == CLIPPED and v.clipped_values == 2
    rec = v.record()
    assert rec["requested"][0][7] == 0.12 and rec["applied"][0][7] == 0.08
    assert rec["requested"][1][7] == -0.01 and rec["applied"][1][7] == 0.0
    assert rec["applied"][2] == rec["requested"][2]


def test_chunk_from_older_evidence_is_stale(spec):
    v = validate_chunk(spec, chunk(), evidence_version=2, latest_evidence_version=3)
    assert v.status == STALE and not v.accepted and "older than the latest handoff 3" in v.reasons[0]
    assert validate_chunk(spec, chunk(), 4, 3).status == ACCEPTED


def test_incremental_spec_accumulates_from_the_current_state():
    ref = reference_joint_spec()
    inc = ActionSpec.from_dict({**ref.to_dict(), "name": "inc", "mode": "incremental"})
    deltas = np.zeros((3, 8))
    deltas[:, 0] = 0.1
    v = validate_chunk(inc, deltas, 0, 0, current=HOME)
    assert v.status == ACCEPTED and np.allclose(v.applied[:, 0], [0.1, 0.2, 0.3])
    assert validate_chunk(inc, deltas, 0, 0).status == REJECTED  # no current state
    deltas[:, 0] = 1.5  # accumulates past joint1's limit at row 1
    assert "row 1" in validate_chunk(inc, deltas, 0, 0, current=HOME).reasons[0]


def test_spec_rejects_inconsistent_declarations():
    d = reference_joint_spec().to_dict()
    with pytest.raises(ValueError):
        ActionSpec.from_dict({**d, "dim": 7})
    with pytest.raises(ValueError):
        ActionSpec.from_dict({**d, "mode": "relative"})
