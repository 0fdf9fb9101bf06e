"""Fingertip positions of arm configurations, on the same Panda model the
planner and the scene use (MuJoCo forward kinematics, no simulation), and the
cell's safety envelope (core.safety) built on them."""
from __future__ import annotations

import mujoco
import numpy as np

from labference_ros.cell.description import CellDescription, common_cell
from labference_ros.mujoco_cell.panda_model import ARM_JOINTS, GRIP_SITE
from labference_ros.core.robots import RobotModel
from labference_ros.core.safety import SafetyEnvelope
from labference_ros.skills.motion import robot_model


class FingertipKinematics:
    def __init__(self):
        self.model = robot_model()
        self.data = mujoco.MjData(self.model)
        self._arm_qadr = np.array([self.model.joint(n).qposadr[0] for n in ARM_JOINTS])
        self._site = self.model.site(GRIP_SITE).id

    def centre(self, arm_q) -> tuple[float, float, float]:
        """The fingertip centre at one arm configuration (7 joint positions, ARM_JOINTS order)."""
        return tuple(float(v) for v in self.positions([arm_q])[0])

    def positions(self, arm_rows: np.ndarray) -> np.ndarray:
        """(L x 7) joint rows -> (L x 3) fingertip centres in the robot base frame."""
        out = np.empty((len(arm_rows), 3))
        for i, q in enumerate(np.asarray(arm_rows, float)):
            self.data.qpos[self._arm_qadr] = q
            mujoco.mj_kinematics(self.model, self.data)
            out[i] = self.data.site_xpos[self._site]
        return out


def cell_envelope(cell: CellDescription | None = None, robot: RobotModel | None = None) -> SafetyEnvelope:
    """The Panda's joint limits and the cell's workspace box: over the table top,
    fingertips at least 5 mm above it and at most 0.8 m. With a robot model
    (core.robots): that robot's limits, checked on the rows and between them."""
    cell = cell or common_cell()  # the table is the same in every cell
    (cx, cy, _), (hx, hy, _) = cell.table.centre, cell.table.half_size
    top = cell.table.top_z
    low, high = (cx - hx, cy - hy, top + 0.005), (cx + hx, cy + hy, top + 0.8)
    if robot is not None:
        return SafetyEnvelope.for_robot(robot, low, high)
    return SafetyEnvelope(workspace_min=low, workspace_max=high)


def envelope_check(envelope: SafetyEnvelope, kinematics: FingertipKinematics | None = None):
    """The EpisodeLoop's envelope callable: (rows, start, start velocity, interval) -> reasons."""
    kinematics = kinematics or FingertipKinematics()
    return lambda rows, start, start_velocity, interval_s: envelope.violations(
        rows, start, start_velocity, interval_s, kinematics.positions)
