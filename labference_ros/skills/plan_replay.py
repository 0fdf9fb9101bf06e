"""A motion plan as rows of the ActionSpec, replayed by sim time.

The row to send next is found from the observation's sim time, bounded by
the rows handed out: when the runtime drops queued rows after a new evidence
handoff, physics only moved over the rows that were executed, so time says
where in the plan the robot is; but in realtime the arm holds its last target
while the next observation is taken and answered, so time runs ahead of the
plan by that delay, and the plan goes on from the row after the last one
handed out (never beyond it: that would jump the arm). A chunk the runtime
ran to its end goes on from the row after it even where time says less (in
realtime the observation can come within a row's interval of its last row),
and one cut short goes on after the row the runtime holds the arm at (the
observation's setpoint), where time in realtime says more.
An operator's pause is the exception (time passes, the arm stands):
``resume_at`` continues from where the arm is.
"""
from __future__ import annotations

import numpy as np

from labference_ros.core.action_spec import ActionSpec
from labference_ros.core.observation import PolicyObservation
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


# Joint distance between the arm and its plan beyond which the plan did not run.
OFF_PLAN_RAD = 0.2
# While moving the arm trails its targets (the servos' lag: 0.15 rad and more at speed, seen
# in realtime runs); a plan that ran leaves the arm near one of its rows this far back.
SERVO_LAG_S = 0.5
# An arm at rest on its target (a pause brought the setpoint to rest on it) is this close.
AT_ROW_RAD = 0.01


def row_held_after_refusal(held_row: np.ndarray, obs: PolicyObservation) -> np.ndarray:
    """The row the arm holds after a refused chunk, which never reached it: the arm
    joints where it is held (its setpoint, else where it stands), the gripper as before."""
    row = np.array(held_row, float)
    row[:7] = obs.restart_joint_positions
    return row


class PlanCursor:
    def __init__(self, rows: np.ndarray, start_time: float, dt: float):
        self.rows, self.start_time, self.dt = rows, start_time, dt
        self.handed_from = 0  # the first row of the last chunk handed out
        self.handed_to: int | None = None  # the row after the last one handed out (None: none yet)

    def _by_time(self, t: float) -> int:
        return int(round((t - self.start_time) / self.dt))

    def index(self, t: float) -> int:
        """The row the plan has reached at t: by time, but no further than the rows handed out."""
        by_time = self._by_time(t)
        return by_time if self.handed_to is None else min(by_time, self.handed_to)

    def reached(self, t: float, row: int | None) -> None:
        """The rows before `row` have all run by t: time may say fewer (never more,
        index() is bounded by the rows handed out), so re-anchor it to say so."""
        if row is not None and self._by_time(t) < row:
            self.start_time = t - row * self.dt

    def done(self, t: float) -> bool:
        return self.index(t) >= len(self.rows)

    def chunk(self, t: float, length: int) -> np.ndarray:
        i = max(0, self.index(t))
        self.handed_from = min(i, len(self.rows) - 1)
        rows = self.rows[i:i + length]
        self.handed_to = i + len(rows)
        return rows

    def follow(self, t: float, arm_q, smooth, last_chunk_ran: bool = True,
               ran_to_end: bool = False, setpoint=None, rows_run: int | None = None) -> None:
        """Before taking the next chunk: where the plan goes on. ``setpoint`` is the arm
        target the runtime last commanded and ``rows_run`` how many rows of the last
        chunk it sent, where it reports them. A refused chunk (none of its rows ran)
        leaves the arm holding that target, so the move restarts from rest there (else
        at the measured ``arm_q``): a jump to where time has got to would be refused
        again, and so would a restart from an arm that lags its target (something
        blocks it). Otherwise as resync, after placing the plan: a chunk the runtime
        says ran to its end goes on from the row after it, even where time says less
        (realtime: the observation is taken as soon as the last row is sent, so a row's
        interval can still be under way); one cut short goes on after the row the arm
        is held at (``after_held_row``)."""
        if last_chunk_ran:
            if ran_to_end:
                self.reached(t, self.handed_to)
            elif setpoint is not None and rows_run is not None and not self.after_held_row(t, setpoint, rows_run):
                # Held off this plan's rows (a pause's stopping rows moved the target on): the next
                # row is no step from there, however near the measured arm stands to the plan.
                self.resume_at(t, setpoint, smooth)
                return
            self.resync(t, arm_q, smooth, setpoint)
            return
        self.handed_to = self.handed_from
        self.resume_at(t, arm_q if setpoint is None else setpoint, smooth)

    def follow_observation(self, obs: PolicyObservation, smooth) -> None:
        """follow() with what the observation says about the last chunk and the arm."""
        self.follow(obs.sim_time, obs.joint_positions, smooth, obs.last_chunk_ran, obs.last_chunk_ran_to_end,
                    obs.joint_setpoint, obs.last_chunk_rows_run)

    def after_held_row(self, t: float, setpoint, rows_run: int) -> bool:
        """The last chunk was cut short (newer evidence, a pause) after ``rows_run`` of
        its rows: the plan goes on from the row after the last one sent, which the
        arm's setpoint must equal. In sync mode time says the same; in realtime it has
        run on while the arm held, and going on where it says would skip rows that
        never ran. False when the setpoint is not that row (the runtime clipped it, a
        pause's stopping rows moved it on, the chunk was not this plan's)."""
        if self.handed_to is None:
            return True
        held = self.handed_from + rows_run - 1  # none ran: the previous chunk's last row
        if 0 <= held < len(self.rows) and np.array_equal(self.rows[held, :7], np.asarray(setpoint, float)):
            self.start_time = t - (held + 1) * self.dt
            return True
        return False

    def resync(self, t: float, arm_q, smooth, restart_q=None) -> None:
        """Before taking the next chunk: if the rows up to where the plan has got to did
        not run (time passed without them: an operator's pause), go on from where the
        arm is held (resume_at from ``restart_q``, the setpoint, where known: the
        controller interpolates from it; else from the measured ``arm_q``). They did
        not if the measured arm is further than OFF_PLAN_RAD from every row of the last
        SERVO_LAG_S, or if it stands on an earlier row of the last chunk and off those
        recent ones: where the plan moves slowly, the recent rows can all lie within
        OFF_PLAN_RAD of where a pause stopped the arm."""
        arm = np.asarray(arm_q, float)
        upto = min(max(0, self.index(t)), len(self.rows) - 1)
        window_start = max(0, upto - int(round(SERVO_LAG_S / self.dt)))
        off_recent = float(np.abs(self.rows[window_start:upto + 1, :7] - arm).max(axis=1).min())
        earlier = self.rows[min(self.handed_from, window_start):window_start, :7]
        off_earlier = float(np.abs(earlier - arm).max(axis=1).min()) if len(earlier) else np.inf
        if off_recent > OFF_PLAN_RAD or (off_earlier <= AT_ROW_RAD and off_recent > 2 * AT_ROW_RAD):
            self.resume_at(t, arm_q if restart_q is None else restart_q, smooth)

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
        self.handed_to = None
