"""A motion plan as rows of the ActionSpec, replayed by sim time.

The row to send next is found from the observation's sim time, not from a
counter of rows handed out: when the runtime drops queued rows after a new
evidence handoff, physics only moved over the rows that were executed, so
time says exactly where in the plan the robot is.
"""
from __future__ import annotations

import numpy as np

from labference_ros.core.action_spec import ActionSpec
from labference_ros.skills.motion import MotionPlan


def plan_rows(plan: MotionPlan, spec: ActionSpec) -> np.ndarray:
    """[N x 8]: the plan's arm targets and the gripper width in force at each row."""
    if abs(plan.dt - spec.hold_interval_s) > 1e-9:
        raise ValueError(f"plan dt {plan.dt} != control interval {spec.hold_interval_s}")
    rows = np.empty((len(plan.arm_q), spec.dim))
    rows[:, :7] = plan.arm_q
    events = sorted(plan.gripper_events, key=lambda e: e.t)
    width = spec.gripper.open_width_m
    k = 0
    for i in range(len(rows)):
        while k < len(events) and events[k].t <= i * plan.dt + 1e-9:
            e = events[k]
            if e.grasp != (e.width < spec.gripper.grasp_below_m):
                raise ValueError(f"gripper event {e} cannot be expressed in the spec's convention")
            width = e.width
            k += 1
        rows[i, spec.gripper_index] = width
    return rows


class PlanCursor:
    def __init__(self, rows: np.ndarray, start_time: float, dt: float):
        self.rows, self.start_time, self.dt = rows, start_time, dt

    def index(self, t: float) -> int:
        return int(round((t - self.start_time) / self.dt))

    def done(self, t: float) -> bool:
        return self.index(t) >= len(self.rows)

    def chunk(self, t: float, length: int) -> np.ndarray:
        i = max(0, self.index(t))
        return self.rows[i:i + length]
