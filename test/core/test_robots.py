"""The robot models: names as franka_ros2 gives them, the published limits, and the
FR3's position-dependent velocity bounds."""
from __future__ import annotations

import numpy as np
import pytest

from labference_ros.cell.description import weighing_cell
from labference_ros.core.action_spec import reference_joint_spec
from labference_ros.core.robots import FR3, PANDA, robot_model


def test_fr3_names_and_namespaces_are_franka_ros2s():
    assert FR3.arm_joints == tuple(f"fr3_joint{i}" for i in range(1, 8))
    assert FR3.finger_joints == ("fr3_finger_joint1", "fr3_finger_joint2")
    assert FR3.gripper_actions == "/fr3_gripper"
    assert PANDA.arm_joints[0] == "panda_joint1" and PANDA.gripper_actions == "/panda_gripper"


def test_fr3_limits_are_the_published_ones():
    assert FR3.max_acceleration == (10.0,) * 7 and FR3.max_jerk == (5000.0,) * 7
    assert (FR3.lower[5], FR3.upper[5]) == (0.5445, 4.5169)
    assert PANDA.max_acceleration[1] == 7.5 and PANDA.max_jerk[1] == 3750.0


def test_fr3_velocity_bound_falls_to_zero_towards_each_end_of_a_joint():
    mid = np.array([0.0, 0.0, 0.0, -1.5, 0.0, 2.5, 0.0])
    down, up = FR3.velocity_bounds(mid)
    assert np.allclose(up, FR3.max_velocity) and np.allclose(down, -np.array(FR3.max_velocity))
    near_top = mid.copy()
    near_top[0] = 2.70  # 0.044 rad below the upper limit
    down, up = FR3.velocity_bounds(near_top)
    assert 0.0 < up[0] < 0.5 and down[0] == -FR3.max_velocity[0]
    near_bottom = mid.copy()
    near_bottom[5] = 0.56  # joint 6, just above its lower limit 0.5445
    down, up = FR3.velocity_bounds(near_bottom)
    assert -0.5 < down[5] < 0.0 and up[5] == FR3.max_velocity[5]
    beyond = mid.copy()
    beyond[3] = -0.10  # joint 4 past its upper end: no speed upwards at all
    assert FR3.velocity_bounds(beyond)[1][3] == 0.0


def test_panda_velocity_bounds_do_not_depend_on_the_position():
    down, up = PANDA.velocity_bounds(np.array(PANDA.upper) - 1e-3)
    assert np.allclose(up, PANDA.max_velocity) and np.allclose(down, -np.array(PANDA.max_velocity))


def test_the_cell_names_the_simulated_and_the_rig_robot():
    robot = weighing_cell().robot
    assert robot.sim_robot is PANDA and robot.sim_robot.arm_joints == robot.arm_joints
    assert robot.rig_robot is FR3


def test_the_reference_action_spec_reads_the_robot():
    fr3 = reference_joint_spec(robot=FR3)
    assert fr3.dimension_names[:7] == FR3.arm_joints and fr3.lower[5] == 0.5445
    assert reference_joint_spec().dimension_names[:7] == PANDA.arm_joints
    assert fr3.content_hash != reference_joint_spec().content_hash


def test_an_unknown_model_is_named():
    with pytest.raises(ValueError, match="unknown robot model 'ur5'"):
        robot_model("ur5")
