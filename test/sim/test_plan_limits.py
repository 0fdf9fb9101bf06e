"""The reference planner's motion a real Panda can follow: every move inside the
joint velocity and acceleration limits, also when a paused plan resumes."""
from __future__ import annotations

import numpy as np

from labference_ros.core.action_spec import reference_joint_spec
from labference_ros.core.safety import SafetyEnvelope
from labference_ros.skills.motion import PickPlacePlanner, PickPlaceSettings
from labference_ros.skills.plan_replay import PlanCursor, plan_rows

READY = np.array([0.0, 0.0, 0.0, -1.571, 0.0, 1.571, -0.785])  # the cell's start: hand not top-down
SPEC = reference_joint_spec(50.0, 50)
ANYWHERE = SafetyEnvelope(workspace_min=(-9, -9, -9), workspace_max=(9, 9, 9))


def tips(arm):
    return np.zeros((len(arm), 3))


def pick_place_rows():
    planner = PickPlacePlanner(PickPlaceSettings(rate_hz=50.0))
    plan = planner.plan_pick_place(READY, "std_10", (0.45, -0.2, 0.015), (0.5, 0.2), 0.065)
    return planner, plan_rows(plan, SPEC)


def test_a_pick_and_place_from_the_ready_pose_keeps_the_joint_limits():
    _, rows = pick_place_rows()
    assert ANYWHERE.violations(rows, READY, None, SPEC.hold_interval_s, tips) == []


def test_a_plan_resumed_after_a_pause_restarts_from_where_the_arm_stands():
    planner, rows = pick_place_rows()
    cursor = PlanCursor(rows, 0.0, SPEC.hold_interval_s)
    stopped = rows[40, :7]  # paused mid-move at row 40; one second later:
    jump = cursor.chunk(0.8 + 1.0, 50)
    assert ANYWHERE.violations(jump, stopped, None, SPEC.hold_interval_s, tips)  # time alone would jump
    cursor.resume_at(1.8, stopped, planner.retime)
    resumed = cursor.chunk(1.8, 50)
    assert np.abs(resumed[0, :7] - stopped).max() < 0.01
    assert ANYWHERE.violations(resumed, stopped, None, SPEC.hold_interval_s, tips) == []
    rest = np.vstack([resumed, cursor.rows[50:]])
    assert np.allclose(rest[-1], rows[-1])  # the plan still ends where it did


def test_a_resume_never_goes_back_to_an_earlier_phase_through_the_same_pose():
    planner, rows = pick_place_rows()
    end_of_transfer = int(np.argmin(np.abs(rows[:-60, :7] - rows[-1, :7]).max(axis=1)))
    assert np.abs(rows[end_of_transfer, :7] - rows[-1, :7]).max() < 0.01  # the retreat ends where transfer did
    cursor = PlanCursor(rows, 0.0, SPEC.hold_interval_s)
    last = len(rows) - 8
    cursor.chunk(last * SPEC.hold_interval_s, 50)  # the final chunk, handed out
    # Where it stopped is as close to the end of the transfer as to the retreat's row.
    stopped = 0.4 * rows[last + 3, :7] + 0.6 * rows[end_of_transfer, :7]
    cursor.resume_at((last + 60) * SPEC.hold_interval_s, stopped, planner.retime)
    resumed = cursor.rows
    assert len(resumed) < 20  # only what was left of the retreat
    assert np.allclose(resumed[:, 7], rows[last + 3, 7])  # the gripper stays as it was (open)
