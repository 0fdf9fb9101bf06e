"""End-effector delta rows -> joint targets (core.ee_conversion) with a
stand-in kinematics whose "joints" are the hand pose itself, so the
arithmetic of frames, scales, the gripper sign and the step timing is
checked exactly."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from labference_ros.core.action_conversion import ConversionError
from labference_ros.core.action_spec import reference_joint_spec
from labference_ros.core.ee_conversion import (axis_angle_from_rotation, ee_delta_conversion,
                                              rotation_from_axis_angle)

# The stand-in's "joints" are a pose: wide joint limits keep the reference check out of the way.
REF = dataclasses.replace(reference_joint_spec(50.0, 50), lower=(-10.0,) * 7 + (0.0,), upper=(10.0,) * 7 + (0.08,))


class PoseAsJoints:
    """q[:3] = hand position, q[3:6] = its axis-angle; solve returns exactly the pose."""

    def __init__(self, miss_m: float = 0.0):
        self.miss_m = miss_m

    def pose(self, q):
        q = np.asarray(q, float)
        return q[:3].copy(), rotation_from_axis_angle(q[3:6])

    def solve(self, q, position, rotation):
        return np.concatenate([position, axis_angle_from_rotation(rotation), [0.0]]), self.miss_m


def conversion(**kw):
    return ee_delta_conversion(REF, PoseAsJoints(kw.pop("miss_m", 0.0)), **kw)


START = np.array([0.3, 0.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.08])


@pytest.mark.parametrize("angle", [0.3, 1.0, 2.5, np.pi - 1e-3])
def test_axis_angle_round_trips(angle):
    v = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5]) * angle
    assert np.allclose(axis_angle_from_rotation(rotation_from_axis_angle(v)), v, atol=1e-6)


def test_base_frame_deltas_accumulate_at_libero_scale_and_20_hz():
    conv = conversion(control_rate_hz=20.0, open_loop_horizon=5)
    rows = np.zeros((10, 7))
    rows[:, 2] = 0.2  # 0.01 m up per step
    rows[:, 6] = 1.0  # close
    v = conv.validate(rows, 0, 0, START)
    assert v.status == "accepted" and v.native["executed_rows"] == 5
    targets = np.array(v.native["step_targets"])
    assert np.allclose(targets[:, 2], 0.5 + 0.01 * np.arange(1, 6))
    assert len(v.applied) == 13 and np.allclose(v.applied[[4, 9, -1], 2], [0.52, 0.54, 0.55])
    assert np.allclose(v.applied[:, 7], 0.0)  # +1 = closed


def test_tool_frame_deltas_turn_with_the_hand():
    turned = START.copy()
    turned[3:6] = [0.0, 0.0, np.pi / 2]  # hand x points along base y
    rows = np.zeros((1, 7))
    rows[0, 0] = 1.0  # 0.05 m along the hand's x
    base = conversion(frame="base").validate(rows, 0, 0, turned)
    tool = conversion(frame="tool").validate(rows, 0, 0, turned)
    assert np.allclose(np.array(base.native["step_targets"])[0, :3], [0.35, 0.0, 0.5])
    assert np.allclose(np.array(tool.native["step_targets"])[0, :3], [0.3, 0.05, 0.5])


def test_a_pose_the_ik_misses_rejects_the_chunk_with_the_reason():
    v = conversion(miss_m=0.02).validate(np.zeros((3, 7)), 0, 0, START)
    assert v.status == "rejected" and "IK misses the hand pose of row 0 by 20.0 mm" in v.reasons[0]


def test_eight_joint_columns_are_not_end_effector_rows():
    v = conversion().validate(np.zeros((3, 8)), 0, 0, START)
    assert v.status == "rejected" and v.reasons == ["native: dimension 8 != 7"]


def test_conventions_that_cannot_be_mapped_are_refused():
    with pytest.raises(ConversionError, match="rotation format 'rot6d' cannot be mapped"):
        conversion(rotation="rot6d")
    with pytest.raises(ConversionError, match="frame 'camera' cannot be mapped"):
        conversion(frame="camera")
