"""Grasp and release of one object, as the tube families recognise them (paper 5.3):
bilateral finger contact while the gripper closes, held GRASP_HOLD_S, is a grasp;
no robot contact on a grasped object for RELEASE_HOLD_S is its release. Pure."""
from __future__ import annotations

from labference_ros.core.measurements import LEFT_FINGER, RIGHT_FINGER, ROBOT, ObjectMeasurement, WorldMeasurement

ROBOT_CONTACTS = (LEFT_FINGER, RIGHT_FINGER, ROBOT)
GRASP_HOLD_S = 0.10
RELEASE_HOLD_S = 0.10


def grasped(m: WorldMeasurement, o: ObjectMeasurement) -> bool:
    return {LEFT_FINGER, RIGHT_FINGER} <= set(o.contacts) and m.gripper_closing


class GraspTracker:
    """One object's grasps and releases over time; `attempt` counts the grasps."""

    def __init__(self):
        self.grasping = False
        self.attempt = 0
        self._grasp_since: float | None = None
        self._free_since: float | None = None

    def step(self, m: WorldMeasurement, o: ObjectMeasurement) -> str | None:
        """"grasp" or "release" when one is recognised at this measurement, else None."""
        now = m.t
        if grasped(m, o):
            self._free_since = None
            if not self.grasping:
                self._grasp_since = now if self._grasp_since is None else self._grasp_since
                if now - self._grasp_since >= GRASP_HOLD_S - 1e-9:
                    self.grasping = True
                    self.attempt += 1
                    return "grasp"
            return None
        self._grasp_since = None
        if self.grasping and not set(o.contacts) & set(ROBOT_CONTACTS):
            self._free_since = now if self._free_since is None else self._free_since
            if now - self._free_since >= RELEASE_HOLD_S - 1e-9:
                self.grasping = False
                return "release"
        return None
