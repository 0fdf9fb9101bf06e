"""The hand's pose and its inverse on the cell's robot model, with the same
differential IK (mink, the same TCP site, limits and solver) the pick-and-place
skills plan with: what turns an end-effector action into joint targets."""
from __future__ import annotations

import mink
import numpy as np

from labference_ros.mujoco_cell.panda_model import ARM_JOINTS, FINGER_JOINTS, GRIP_SITE
from labference_ros.skills.motion import robot_model

IK_ITERATIONS = 30
IK_DT = 0.01


class HandKinematics:
    """pose(q) -> (position m, rotation matrix) of the TCP in the robot base frame;
    solve(q, position, rotation) -> (joints, position error m)."""

    def __init__(self):
        self.model = robot_model()
        m = self.model
        self._arm_qadr = np.array([m.joint(n).qposadr[0] for n in ARM_JOINTS])
        self._finger_qadr = np.array([m.joint(n).qposadr[0] for n in FINGER_JOINTS])
        self.configuration = mink.Configuration(m)
        self.tcp_task = mink.FrameTask(GRIP_SITE, "site", position_cost=1.0, orientation_cost=0.5, lm_damping=1e-3)
        self.posture_task = mink.PostureTask(m, cost=1e-3)
        self.limits = [mink.ConfigurationLimit(m)]

    def _set_q(self, arm_q) -> None:
        q = np.zeros(self.model.nq)
        q[self._arm_qadr] = arm_q
        q[self._finger_qadr] = 0.04
        self.configuration.update(q)

    def pose(self, arm_q) -> tuple[np.ndarray, np.ndarray]:
        self._set_q(np.asarray(arm_q, float))
        T = self.configuration.get_transform_frame_to_world(GRIP_SITE, "site")
        return np.asarray(T.translation()), np.asarray(T.rotation().as_matrix())

    def solve(self, arm_q, position, rotation) -> tuple[np.ndarray, float]:
        self._set_q(np.asarray(arm_q, float))
        self.posture_task.set_target(self.configuration.q.copy())
        self.tcp_task.set_target(mink.SE3.from_rotation_and_translation(mink.SO3.from_matrix(np.asarray(rotation)),
                                                                        np.asarray(position, float)))
        for _ in range(IK_ITERATIONS):
            v = mink.solve_ik(self.configuration, [self.tcp_task, self.posture_task], IK_DT, solver="daqp",
                              damping=1e-3, limits=self.limits)
            self.configuration.integrate_inplace(v, IK_DT)
        reached = self.configuration.get_transform_frame_to_world(GRIP_SITE, "site")
        error = float(np.linalg.norm(np.asarray(reached.translation()) - np.asarray(position, float)))
        return self.configuration.q[self._arm_qadr].copy(), error
