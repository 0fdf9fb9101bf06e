"""A motion plan as rows of the ActionSpec, replayed by sim time.

The row to send next is found from the observation's sim time, not from a
counter of rows handed out: when the runtime drops queued rows after a new
evidence handoff, physics only moved over the rows that were executed, so
time says exactly where in the plan the robot is. An operator's pause is the
exception (time passes, the arm stands): ``resume_at`` continues from where
the arm is.
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


# Joint distance between the arm and its plan beyond which the plan did not run
# (the servos' lag while moving, and a realtime run's inference delay, stay below it).
OFF_PLAN_RAD = 0.2


class PlanCursor:
    def __init__(self, rows: np.ndarray, start_time: float, dt: float):
        self.rows, self.start_time, self.dt = rows, start_time, dt
        self.handed_from = 0  # the first row of the last chunk handed out

    def index(self, t: float) -> int:
        return int(round((t - self.start_time) / self.dt))

    def done(self, t: float) -> bool:
        return self.index(t) >= len(self.rows)

    def chunk(self, t: float, length: int) -> np.ndarray:
        i = max(0, self.index(t))
        self.handed_from = min(i, len(self.rows) - 1)
        return self.rows[i:i + length]

    def resync(self, t: float, arm_q, smooth) -> None:
        """Before taking the next chunk: if the arm is further from where the plan has
        got to than OFF_PLAN_RAD (time passed without the rows running: an operator's
        pause), go on from where the arm stands (resume_at)."""
        expected = self.rows[min(max(0, self.index(t)), len(self.rows) - 1), :7]
        if float(np.abs(expected - np.asarray(arm_q, float)).max()) > OFF_PLAN_RAD:
            self.resume_at(t, arm_q, smooth)

    def resume_at(self, t: float, arm_q, smooth) -> None:
        """Time passed without the plan running (an operator paused the arm), so time
        no longer says where the robot is: continue from the row nearest to where the
        arm stands, the move it stopped in restarted from rest by ``smooth`` (the
        planner's retime: start, rows -> rows), the cursor re-anchored at t."""
        arm_q = np.asarray(arm_q, float)
        upto = min(max(0, self.index(t)), len(self.rows) - 1)
        # Only rows the arm can have reached: from the last chunk's first row on (a
        # retreat can end where an earlier transfer did).
        first = min(self.handed_from, upto)
        i = first + int(np.argmin(np.abs(self.rows[first:upto + 1, :7] - arm_q).max(axis=1)))
        steps = np.abs(np.diff(self.rows[i:, :7], axis=0)).max(axis=1)
        resting = np.nonzero(steps < 1e-6)[0]
        end = i + (int(resting[0]) if len(resting) else len(steps))  # where the plan next comes to rest
        if end > i:
            arm = smooth(arm_q, self.rows[i + 1:end + 1, :7])
            restarted = np.repeat(self.rows[i][None, :], len(arm), axis=0)
            restarted[:, :7] = arm
            self.rows = np.vstack([restarted, self.rows[end + 1:]])
        else:
            self.rows = self.rows[i:]
        self.start_time = t
        self.handed_from = 0
