"""Native action conventions <-> the reference interface, both ways, and
the bridge's check of native chunks (limits before and after conversion)."""
import numpy as np
import pytest

from labference_ros.core.action_conversion import (GRIPPER_CLOSED_1, ActionConversion, ConversionError,
                                                   make_conversion, native_spec)
from labference_ros.core.action_spec import ACCEPTED, CLIPPED, REJECTED, STALE, reference_joint_spec

REF = reference_joint_spec(50.0, 50)
Q0 = np.array([0.0, 0.0, 0.0, -1.57079, 0.0, 1.57079, -0.7853, 0.08])


def droid():
    return make_conversion(REF, arm="velocity", gripper=GRIPPER_CLOSED_1)


def test_velocity_rows_integrate_at_the_control_rate_and_the_gripper_is_normalised():
    conv = droid()
    assert conv.native.mode == "velocity" and conv.native.units[0] == "normalised"
    assert conv.native.gripper.kind == GRIPPER_CLOSED_1 and conv.native.dimension_names[7] == "gripper_position"
    rows = np.zeros((3, 8))
    rows[:, 0] = 0.5  # 0.5 x 3 rad/s for 3 intervals of 20 ms: 0.03 rad each
    rows[:, 7] = [0.0, 0.5, 1.0]
    out = conv.to_reference(rows, Q0)
    assert np.allclose(out[:, 0], [0.03, 0.06, 0.09])
    assert np.allclose(out[:, 1:7], Q0[1:7])
    assert np.allclose(out[:, 7], [0.08, 0.04, 0.0])  # 1 = closed = zero width


@pytest.mark.parametrize("arm, gripper", [("velocity", GRIPPER_CLOSED_1), ("delta", "target_width_m"),
                                          ("position", GRIPPER_CLOSED_1), ("delta", GRIPPER_CLOSED_1)])
def test_conversions_round_trip_both_ways(arm, gripper):
    conv = make_conversion(REF, arm=arm, gripper=gripper)
    rng = np.random.default_rng(3)
    targets = Q0 + np.cumsum(rng.uniform(-0.01, 0.01, (20, 8)), axis=0)
    targets[:, 7] = rng.uniform(0.0, 0.08, 20)
    native = conv.from_reference(targets, Q0)
    assert np.allclose(conv.to_reference(native, Q0), targets, atol=1e-12)
    again = conv.from_reference(conv.to_reference(native, Q0), Q0)
    assert np.allclose(again, native, atol=1e-9)


def test_the_reference_convention_is_the_identity():
    conv = make_conversion(REF)
    assert conv.identity and conv.native is REF
    rows = np.tile(Q0, (4, 1))
    v = conv.validate(rows, 1, 1, Q0)
    assert v.status == ACCEPTED and v.native is None and "native" not in v.record()


def test_a_valid_velocity_chunk_keeps_native_requested_and_applied_rows():
    conv = droid()
    rows = np.zeros((5, 8))
    rows[:, 3] = 0.1
    rows[:, 7] = 1.0
    v = conv.validate(rows, 2, 2, Q0)
    assert v.status == ACCEPTED
    rec = v.record()
    assert rec["native"]["spec"] == conv.native.name and rec["native"]["requested"][0][3] == 0.1
    assert np.allclose(np.array(rec["applied"])[:, 3], Q0[3] + 0.006 * np.arange(1, 6))
    assert rec["requested"] == rec["applied"]  # nothing clipped after conversion


def test_velocities_beyond_the_declared_range_are_clipped_before_integration():
    conv = droid()
    rows = np.zeros((2, 8))
    rows[:, 0] = 2.0  # clipped to 1.0 -> 0.06 rad per interval
    v = conv.validate(rows, 0, 0, Q0)
    assert v.status == CLIPPED and v.clipped_values == 2
    assert np.allclose(v.applied[:, 0], [0.06, 0.12])
    assert v.record()["native"]["requested"][0][0] == 2.0  # what the server sent stays visible


@pytest.mark.parametrize("chunk, reason", [
    (np.zeros((3, 7)), "native: dimension 7 != 8"),
    (np.full((2, 8), np.nan), "native: 16 non-finite values"),
    ("actions", "native: chunk is not numeric"),
    (np.zeros((0, 8)), "native: empty chunk"),
])
def test_malformed_native_chunks_are_rejected_with_the_cause(chunk, reason):
    v = droid().validate(chunk, 0, 0, Q0)
    assert v.status == REJECTED and v.applied is None
    assert any(r.startswith(reason) for r in v.reasons), v.reasons
    v.record()  # stays serialisable


def test_integration_past_a_joint_limit_rejects_the_chunk():
    rows = np.zeros((40, 8))
    rows[:, 3] = 1.0  # joint 4 starts at -1.571 and may not exceed -0.0698
    v = droid().validate(rows, 0, 0, Q0)
    assert v.status == REJECTED and "panda_joint4" in v.reasons[0]
    assert v.record()["native"]["status"] == ACCEPTED  # the velocities themselves were fine


def test_stale_native_chunks_stay_stale():
    v = droid().validate(np.zeros((2, 8)), 1, 2, Q0)
    assert v.status == STALE and v.applied is None


def test_conversions_refuse_what_the_reference_cannot_express():
    with pytest.raises(ConversionError, match="arm convention"):
        make_conversion(REF, arm="torque")
    with pytest.raises(ConversionError, match="gripper convention"):
        native_spec(REF, "velocity", "percent_open")
    other_rate = native_spec(reference_joint_spec(15.0, 50), "velocity", GRIPPER_CLOSED_1)
    with pytest.raises(ConversionError, match="control rates differ"):
        ActionConversion(other_rate, REF, "velocity", 3.0)
