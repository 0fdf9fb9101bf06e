"""Motion skills on the project's motion layer (skills/motion.py planner):
each returns [N x 8] rows of the ActionSpec, the same rows every other
system sends, so they go through the same step owner and command topics.

Grasps are top-down like the reference systems'; heights follow the
planner's settings so the agent's pick is the reference pick split in two.
"""
from __future__ import annotations

import numpy as np

from labference_ros.core.action_spec import ActionSpec
from labference_ros.perception.vision import BALANCE, CELL
from labference_ros.skills.motion import PickPlacePlanner

TRAVEL_ABOVE_PAN = 0.10  # travel height above the pan top, clears the housing


class Skills:
    def __init__(self, planner: PickPlacePlanner, spec: ActionSpec):
        self.planner, self.spec = planner, spec
        self.rate = spec.control_frequency_hz

    def _rows(self, arm_q: np.ndarray, width: float) -> np.ndarray:
        rows = np.empty((len(arm_q), self.spec.dim))
        rows[:, :7] = arm_q
        rows[:, self.spec.gripper_index] = width
        return rows

    def _moves(self, q, points, hold_s: float = 0.0) -> np.ndarray:
        return self.planner.plan_tcp_moves(q, points, hold_s).arm_q

    def hold(self, q, width: float, seconds: float) -> np.ndarray:
        n = max(1, int(round(seconds * self.rate)))
        return self._rows(np.repeat(np.asarray(q, float)[None, :], n, axis=0), width)

    def move_to(self, q, width: float, xyz) -> np.ndarray:
        return self._rows(self._moves(q, [np.asarray(xyz, float)], 0.2), width)

    def set_width(self, q, width: float, seconds: float = 0.8) -> np.ndarray:
        return self.hold(q, width, seconds)

    def travel_z(self) -> float:
        return BALANCE.pan_top_z + TRAVEL_ABOVE_PAN + 0.05

    def pick(self, q, name: str, xyz) -> tuple[np.ndarray, float]:
        """-> rows, grasp width. Open, approach above, descend, grasp, lift."""
        s = self.planner.settings
        shape = CELL.objects[name]
        obj = np.asarray(xyz, float)
        grasp = np.array([obj[0], obj[1], obj[2] + shape.height / 2 - s.grasp_below_top])
        above = np.array([grasp[0], grasp[1], max(self.travel_z(), grasp[2] + s.approach_height)])
        open_w = min(self.spec.gripper.open_width_m, 2 * shape.radius + s.open_margin)
        hold_w = 2 * shape.radius
        a = self._moves(q, [above, grasp], s.arrive_settle_s)
        b = self._moves(a[-1], [], s.grasp_settle_s)
        c = self._moves(b[-1], [above])
        rows = np.concatenate([self._rows(a, open_w), self._rows(b, hold_w), self._rows(c, hold_w)])
        return rows, hold_w

    def place(self, q, name: str, dest_xy, surface_z: float, hold_w: float) -> np.ndarray:
        """Carry at travel height, lower, release, retreat up."""
        s = self.planner.settings
        shape = CELL.objects[name]
        place = np.array([dest_xy[0], dest_xy[1],
                          surface_z + s.release_clearance + shape.height - s.grasp_below_top])
        p, _ = self.planner.tcp_pose(q)
        travel = max(self.travel_z(), float(p[2]), place[2] + s.approach_height)
        above = np.array([place[0], place[1], travel])
        up = np.array([p[0], p[1], travel])
        open_w = min(self.spec.gripper.open_width_m, 2 * shape.radius + s.open_margin)
        a = self._moves(q, [up, above, place], s.arrive_settle_s)
        b = self._moves(a[-1], [], s.release_settle_s)
        c = self._moves(b[-1], [above])
        return np.concatenate([self._rows(a, hold_w), self._rows(b, open_w), self._rows(c, open_w)])
