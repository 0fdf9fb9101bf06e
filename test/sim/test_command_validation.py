"""Bad arm commands are rejected with a reason and the robot holds still."""
import math

import numpy as np
import pytest
from sim_helpers import make_instance

from labference_ros.mujoco_cell.panda_model import HOME_ARM_Q
from labference_ros.sim.backend import ARM_JOINT_NAMES
from labference_ros.sim.command_validation import (check_ordered_arm_targets, validate_arm_command,
                                                   validate_gripper_command)
from labference_ros.sim.mujoco_backend import MujocoBackend

GOOD = list(HOME_ARM_Q)


def with_value(i, v):
    q = list(GOOD)
    q[i] = v
    return q


@pytest.mark.parametrize("names, positions, reason", [
    (ARM_JOINT_NAMES, with_value(2, math.nan), "not finite"),
    (ARM_JOINT_NAMES, with_value(0, math.inf), "not finite"),
    (ARM_JOINT_NAMES, GOOD[:6], "6 positions"),
    (ARM_JOINT_NAMES[:6], GOOD[:6], "expected 7"),
    (ARM_JOINT_NAMES, with_value(3, 0.5), "panda_joint4 target 0.5000 outside limits"),
    (ARM_JOINT_NAMES, with_value(1, -2.0), "panda_joint2"),
    (("panda_joint1",) * 7, GOOD, "duplicate"),
    (ARM_JOINT_NAMES[:6] + ("elbow",), GOOD, "unknown joints"),
    (ARM_JOINT_NAMES, ["a"] * 7, "not numbers"),
])
def test_bad_commands_are_rejected_with_reason(names, positions, reason):
    check, ordered = validate_arm_command(names, positions)
    assert not check.ok and reason in check.reason and ordered == ()


@pytest.mark.parametrize("positions", [GOOD, with_value(2, math.nan), with_value(0, -math.inf),
                                       with_value(3, 0.5), with_value(5, -0.0176), with_value(5, -0.0175)])
def test_the_per_step_check_of_ordered_targets_decides_as_the_full_validation(positions):
    """lab_sim checks each interpolated target with check_ordered_arm_targets alone."""
    full, _ordered = validate_arm_command(ARM_JOINT_NAMES, positions)
    assert check_ordered_arm_targets(tuple(positions)) == full


def test_the_per_step_check_refuses_a_target_of_another_length():
    assert not check_ordered_arm_targets(tuple(GOOD[:6])).ok and not check_ordered_arm_targets(()).ok


def test_names_in_any_order_are_reordered():
    names = tuple(reversed(ARM_JOINT_NAMES))
    check, ordered = validate_arm_command(names, list(reversed(GOOD)))
    assert check.ok and ordered == tuple(GOOD)


def test_gripper_command_checks():
    assert validate_gripper_command(0.05, 0.1, 10.0, 0.005, 0.005, True).ok
    assert "width" in validate_gripper_command(0.2, 0.1, 0, 0.005, 0.005, False).reason
    assert "force" in validate_gripper_command(0.02, 0.1, 500, 0.005, 0.005, True).reason
    assert "speed" in validate_gripper_command(0.02, 0.0, 0, 0.005, 0.005, False).reason
    assert "finite" in validate_gripper_command(math.nan, 0.1, 0, 0.005, 0.005, False).reason


def test_rejected_command_holds_the_robot_still():
    backend = MujocoBackend()
    backend.load(make_instance())
    # Start a motion, then send garbage mid-way.
    assert backend.set_arm_targets(with_value(0, 0.6)).ok
    backend.advance(0.15)
    check = backend.set_arm_targets(with_value(0, math.nan))
    assert not check.ok and "not finite" in check.reason
    backend.advance(0.3)  # let the servo absorb the momentum it had
    held = np.array(backend.joint_state().position[:7])
    assert np.all(np.isfinite(backend.data.ctrl))
    for bad in (GOOD[:5], with_value(5, 4.0)):
        assert not backend.set_arm_targets(bad).ok
        backend.advance(0.5)
    js = backend.joint_state()
    assert np.max(np.abs(np.array(js.position[:7]) - held)) < 2e-3
    assert np.max(np.abs(js.velocity[:7])) < 1e-2
    assert not backend.set_gripper(-1.0).ok
    backend.close()
