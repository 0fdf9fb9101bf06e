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
    faster = native_spec(REF, "velocity", GRIPPER_CLOSED_1, control_rate_hz=100.0)
    with pytest.raises(ConversionError, match="exceeds the bridge's 50 Hz"):
        ActionConversion(faster, REF, "velocity", 3.0)
    with pytest.raises(ConversionError, match="velocity rule"):
        make_conversion(REF, arm="velocity", gripper=GRIPPER_CLOSED_1, velocity_rule="saturate")


def droid_15hz(**kw):
    return make_conversion(REF, arm="velocity", gripper=GRIPPER_CLOSED_1, velocity_scale=3.0,
                           velocity_rule="scale_vector", control_rate_hz=15.0, **kw)


def test_droid_rows_are_15_hz_steps_of_at_most_0_2_rad_interpolated_at_the_bridge_rate():
    conv = droid_15hz(open_loop_horizon=8)
    rows = np.zeros((10, 8))
    rows[:, 0] = 1.0  # one unit: 0.2 rad per 15 Hz step
    rows[:, 7] = 1.0
    v = conv.validate(rows, 0, 0, Q0)
    assert v.status == ACCEPTED and v.native["executed_rows"] == 8  # openpi's DROID example: 8 of 10
    applied = v.applied
    assert len(applied) == 27  # 8 steps of 1/15 s = 0.533 s, in 20 ms rows
    t = np.arange(1, 28) * 0.02
    assert np.allclose(applied[:, 0], np.minimum(t, 8 / 15) * 3.0)  # 0.2 rad per step, linear between
    step_ends = np.round(np.arange(1, 9) / 15 / 0.02).astype(int) - 1  # rows nearest each step's end
    assert np.allclose(np.diff(np.concatenate([[0.0], applied[step_ends[[2, 5]], 0]])), [0.6, 0.6], atol=0.03)
    assert np.allclose(applied[:, 7], 0.0)  # closed


def test_an_over_range_velocity_row_is_scaled_as_a_vector_not_clipped_per_joint():
    conv = droid_15hz()
    rows = np.zeros((1, 8))
    rows[0, :3] = [2.0, 1.0, -0.5]  # largest 2: the whole row is halved
    v = conv.validate(rows, 0, 0, Q0)
    assert v.status == ACCEPTED and v.clipped_values == 0 and v.native["scaled_rows"] == 1
    step = v.applied[-1, :3] - Q0[:3]
    assert np.allclose(step, [0.2, 0.1, -0.05])  # direction kept; a per-joint clip would give 0.2, 0.2, -0.1
    assert v.record()["native"]["requested"][0][0] == 2.0  # as the server sent it


def test_the_gripper_threshold_binarises_and_holds_for_the_step():
    conv = droid_15hz(gripper_threshold=0.5)
    rows = np.zeros((2, 8))
    rows[:, 7] = [0.4, 0.6]
    applied = conv.validate(rows, 0, 0, Q0).applied
    assert len(applied) == 7  # 2/15 s
    widths = applied[:, 7]
    assert np.allclose(widths[:4], 0.08) and np.allclose(widths[4:], 0.0), widths  # step 2 starts at 0.0667 s


def test_joint_position_rows_at_15_hz_are_reached_at_each_steps_end():
    conv = make_conversion(REF, arm="position", gripper=GRIPPER_CLOSED_1, control_rate_hz=15.0)
    target = Q0.copy()
    target[1] += 0.3
    target[7] = 0.0
    applied = conv.validate(np.tile(target, (3, 1)), 0, 0, Q0).applied
    assert len(applied) == 10 and np.allclose(applied[-1, :7], target[:7])
    assert np.allclose(applied[:, 1], np.minimum(np.arange(1, 11) * 0.02 * 15, 1.0) * 0.3)
