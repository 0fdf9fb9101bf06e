"""The reference planner's motion a real Panda can follow: every move inside the
joint velocity and acceleration limits, also when a paused plan resumes."""
from __future__ import annotations

import numpy as np

from labference_ros.cell.description import weighing_cell
from labference_ros.core.action_spec import reference_joint_spec
from labference_ros.core.safety import SafetyEnvelope
from labference_ros.skills.motion import PickPlacePlanner, PickPlaceSettings
from labference_ros.skills.plan_replay import PlanCursor, plan_rows

STD_10 = weighing_cell().objects["std_10"]

READY = np.array([0.0, 0.0, 0.0, -1.571, 0.0, 1.571, -0.785])  # the cell's start: hand not top-down
SPEC = reference_joint_spec(50.0, 50)
ANYWHERE = SafetyEnvelope(workspace_min=(-9, -9, -9), workspace_max=(9, 9, 9))


def tips(arm):
    return np.zeros((len(arm), 3))


def pick_place_rows():
    planner = PickPlacePlanner(PickPlaceSettings(rate_hz=50.0))
    plan = planner.plan_pick_place(READY, STD_10, (0.45, -0.2, 0.015), (0.5, 0.2), 0.065)
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


def test_in_realtime_the_next_chunk_continues_the_last_one_despite_the_observation_delay():
    """Realtime: the arm holds its last target while the next observation is taken and
    answered, so sim time runs ahead of the rows that ran; the next chunk still starts
    right after the last row handed out, inside the envelope from that setpoint."""
    _, rows = pick_place_rows()
    dt = SPEC.hold_interval_s
    cursor = PlanCursor(rows, 0.0, dt)
    mid = int(np.argmax(np.abs(np.diff(rows[:, :7], axis=0)).max(axis=1)))  # the fastest part of the plan
    first = cursor.chunk(0.0, mid)
    setpoint, velocity = first[-1, :7], (first[-1, :7] - first[-2, :7]) / dt
    late = mid * dt + 0.15  # observation and inference took 150 ms of sim time
    following = cursor.chunk(late, 50)
    assert np.array_equal(following[0], rows[mid])
    assert ANYWHERE.violations(following, setpoint, velocity, dt, tips) == []
    by_time = rows[int(round(late / dt)):][:50]  # what sim time alone would have handed out
    assert ANYWHERE.violations(by_time, setpoint, velocity, dt, tips)


def test_rows_dropped_for_newer_evidence_are_handed_out_again():
    """Sync: the runtime ran 20 of 50 rows and dropped the rest (a new evidence handoff);
    time says where the arm is, and the plan goes on from there."""
    _, rows = pick_place_rows()
    dt = SPEC.hold_interval_s
    cursor = PlanCursor(rows, 0.0, dt)
    cursor.chunk(0.0, 50)
    assert np.array_equal(cursor.chunk(20 * dt, 50)[0], rows[20])


def test_an_arm_trailing_its_targets_is_on_plan_and_one_stopped_early_is_not():
    """resync: after a fast chunk the arm trails its last target by the servos' lag (more
    than OFF_PLAN_RAD at speed) and the plan goes on; an arm that stopped early in the
    chunk (a pause dropped its rows) resumes from where it stands."""
    from labference_ros.skills.plan_replay import OFF_PLAN_RAD

    planner, rows = pick_place_rows()
    dt = SPEC.hold_interval_s
    steps = np.abs(np.diff(rows[:, :7], axis=0)).max(axis=1)
    end = int(np.argmax(steps)) + 1  # a chunk that ends at the plan's fastest row
    trailing = rows[end - 20, :7]  # 400 ms behind
    assert np.abs(trailing - rows[end, :7]).max() > OFF_PLAN_RAD
    cursor = PlanCursor(rows, 0.0, dt)
    cursor.chunk(0.0, end)
    cursor.resync(end * dt + 0.1, trailing, planner.retime)
    assert len(cursor.rows) == len(rows) and np.array_equal(cursor.chunk(end * dt + 0.1, 5)[0], rows[end])

    stopped = rows[5, :7]  # paused 0.1 s into the chunk
    cursor = PlanCursor(rows, 0.0, dt)
    cursor.chunk(0.0, end)
    cursor.resync(end * dt + 0.1, stopped, planner.retime)
    assert np.abs(cursor.chunk(end * dt + 0.1, 5)[0, :7] - stopped).max() < 0.01


def test_an_arm_paused_where_the_plan_moves_slowly_resumes_where_it_stands():
    """A pause two rows into a chunk at the start of a move: the plan's last 0.5 s of
    rows handed out all lie within OFF_PLAN_RAD of the stopped arm, yet going on after
    them would jump the arm; it resumes from where it stands instead."""
    from labference_ros.skills.plan_replay import OFF_PLAN_RAD, SERVO_LAG_S

    planner, rows = pick_place_rows()
    dt = SPEC.hold_interval_s
    cursor = PlanCursor(rows, 0.0, dt)
    cursor.chunk(0.0, 50)
    stopped = rows[2, :7]
    recent = rows[50 - int(round(SERVO_LAG_S / dt)):51, :7]
    assert np.abs(recent - stopped).max(axis=1).min() <= OFF_PLAN_RAD  # "near" by that test alone
    assert ANYWHERE.violations(rows[50:100], stopped, None, dt, tips)  # going on there is refused
    later = 50 * dt + 1.0  # one second paused
    cursor.resync(later, stopped, planner.retime)
    restarted = cursor.chunk(later, 50)
    assert np.abs(restarted[0, :7] - stopped).max() < 0.01
    assert ANYWHERE.violations(restarted, stopped, None, dt, tips) == []


def test_after_a_refused_chunk_the_move_restarts_from_rest_where_the_arm_holds():
    """The runtime refused a chunk mid-move (the arm holds the row before it, and has come
    to rest there); going on where time says would be refused again at every try, the
    restart from where the arm stands is not."""
    planner, rows = pick_place_rows()
    dt = SPEC.hold_interval_s
    mid = int(np.argmax(np.abs(np.diff(rows[:, :7], axis=0)).max(axis=1)))
    cursor = PlanCursor(rows, 0.0, dt)
    cursor.chunk(0.0, mid)
    cursor.chunk(mid * dt + 0.1, 50)  # refused
    held = rows[mid - 1, :7]
    later = mid * dt + 0.25
    assert ANYWHERE.violations(rows[int(round(later / dt)):][:50], held, None, dt, tips)
    cursor.follow(later, held, planner.retime, last_chunk_ran=False)
    restarted = cursor.chunk(later, 50)
    assert np.abs(restarted[0, :7] - held).max() < 0.01
    assert ANYWHERE.violations(restarted, held, None, dt, tips) == []
    assert np.allclose(cursor.rows[-1], rows[-1])  # the plan still ends where it did


def test_a_chunk_that_ran_to_its_end_goes_on_from_the_next_row_even_where_time_says_less():
    """Realtime: the bridge observes as soon as the last row of a chunk is sent, and the
    system can answer within half a row's interval of sim time. By time alone the plan
    would repeat that last row, a moving setpoint stopped for one interval, which the
    envelope refuses; the runtime says the chunk ran to its end, so it goes on after it."""
    _, rows = pick_place_rows()
    dt = SPEC.hold_interval_s
    mid = int(np.argmax(np.abs(np.diff(rows[:, :7], axis=0)).max(axis=1)))  # at speed
    cursor = PlanCursor(rows, 0.0, dt)
    cursor.chunk(0.0, mid)  # rows 0 .. mid-1; the last one sent at (mid - 1) * dt
    observed = (mid - 1) * dt + 0.004
    setpoint = rows[mid - 1, :7]
    velocity = (rows[mid - 1, :7] - rows[mid - 2, :7]) / dt
    repeated = rows[mid - 1:mid - 1 + 50]
    assert ANYWHERE.violations(repeated, setpoint, velocity, dt, tips)  # what time alone hands out
    assert np.array_equal(PlanCursor(rows, 0.0, dt).chunk(observed, 50)[0], rows[mid - 1])
    cursor.follow(observed, setpoint, None, last_chunk_ran=True, ran_to_end=True)
    going_on = cursor.chunk(observed, 50)
    assert np.array_equal(going_on[0], rows[mid])
    assert ANYWHERE.violations(going_on, setpoint, velocity, dt, tips) == []
    later = observed + 50 * dt + 0.003  # the next one too, its time anchored to the rows
    cursor.follow(later, rows[mid + 49, :7], None, last_chunk_ran=True, ran_to_end=True)
    assert np.array_equal(cursor.chunk(later, 50)[0], rows[mid + 50])


def test_a_chunk_cut_short_goes_on_from_where_time_says():
    """Sync mode: newer evidence dropped a chunk's last row; time says which rows ran."""
    _, rows = pick_place_rows()
    dt = SPEC.hold_interval_s
    cursor = PlanCursor(rows, 0.0, dt)
    cursor.chunk(0.0, 50)
    cursor.follow(49 * dt, rows[48, :7], None, last_chunk_ran=True, ran_to_end=False)
    assert np.array_equal(cursor.chunk(49 * dt, 50)[0], rows[49])


def test_restarts_after_a_refusal_begin_at_the_setpoint_an_arm_blocked_short_of_it_holds():
    """Something blocks the wrist 0.08 rad short of its target (joint 7's servo cannot
    close that gap: its force range is exhausted). A chunk is refused; every restart
    from the measured arm would jump the setpoint by the gap and be refused again, so
    the arm would hold to the deadline. The observation carries the setpoint (Franka's
    q_d) and the scripted system restarts from it: accepted, and the move goes on."""
    import copy
    import dataclasses

    from labference_ros.core.action_conversion import identity
    from labference_ros.core.episode_loop import EpisodeLoop
    from labference_ros.core.observation import ARM_JOINTS, FINGER_JOINTS
    from labference_ros.tasks.scripted_base import PlannedMotionSystem

    class OneMove(PlannedMotionSystem):
        name = "one_move"

        def decide(self, obs, evaluator):
            return None if self.moved else ("std_10",)

        def plan_move(self, obs, move):
            return self.planner.plan_pick_place(obs.joint_positions, STD_10, (0.45, -0.2, 0.015), (0.5, 0.2),
                                                0.065)

    class Instance:
        def public_instruction(self):
            return "move std_10"

    dt = SPEC.hold_interval_s
    gap = np.array([0, 0, 0, 0, 0, 0, -0.08])  # the blocked wrist's lag behind its target

    def envelope(rows, start, velocity, interval):
        return ANYWHERE.violations(rows, start, velocity, interval, tips)

    system = OneMove(SPEC)
    loop = EpisodeLoop(system, identity(SPEC), episode_id="ep", instance=Instance(), envelope=envelope)
    image = np.zeros((4, 4, 3), np.uint8)
    t, arm = 0.0, READY

    def observe():
        joints = {**dict(zip(ARM_JOINTS, arm)), **{f: 0.04 for f in FINGER_JOINTS}}
        return loop.observe(t, {"front": image}, {"front": t}, joints, {})

    def run_queue():
        nonlocal t, arm
        while loop.next_command(t) is not None:
            t += dt
            arm = loop.setpoint + gap if loop.setpoint is not None else arm

    obs = observe()
    assert obs.joint_setpoint is None  # nothing commanded yet
    assert loop.take_chunk(system.act(obs), t).accepted
    run_queue()
    obs = observe()
    assert np.array_equal(obs.joint_setpoint, loop.setpoint)
    assert np.isclose(np.abs(obs.joint_positions - obs.joint_setpoint).max(), 0.08)
    chunk = system.act(obs).copy()
    chunk[0, 0] += 0.5  # the runtime refuses this chunk (any reason will do)
    assert not loop.take_chunk(chunk, t).accepted
    run_queue()  # the arm holds one interval

    obs = observe()
    from_measured = copy.deepcopy(system).act(dataclasses.replace(obs, joint_setpoint=None))
    assert envelope(from_measured, loop.setpoint, loop.setpoint_velocity, dt)  # the premise: refused forever
    chunks = 0
    while system.cursor is not None and chunks < 40:  # the rest of the move, the wrist blocked all along
        assert loop.take_chunk(system.act(obs), t).accepted
        run_queue()
        obs = observe()
        chunks += 1
    assert system.cursor is None
    assert np.allclose(loop.setpoint, pick_place_rows()[1][-1, :7], atol=1e-6)  # the plan ran to its end


def test_in_realtime_a_chunk_cut_short_goes_on_after_the_row_the_arm_is_held_at():
    """Realtime: newer evidence dropped a chunk after 20 of its 50 rows at speed; the arm
    held its last target while the next observation was taken and answered (150 ms of
    sim time). Time alone skips the rows that never ran, a jump the envelope refuses;
    the runtime says how many rows it sent and the setpoint which row the arm is held
    at, and the plan goes on after it. Answered within half a row of that row, time
    alone would send it again (a moving setpoint stopped): also refused, also mended."""
    _, rows = pick_place_rows()
    dt = SPEC.hold_interval_s
    fastest = int(np.argmax(np.abs(np.diff(rows[:, :7], axis=0)).max(axis=1)))
    start = fastest - 20
    setpoint = rows[start + 19, :7]
    velocity = (rows[start + 19, :7] - rows[start + 18, :7]) / dt
    for late in ((start + 19) * dt + 0.15, (start + 19) * dt + 0.004):
        by_time = PlanCursor(rows, 0.0, dt)
        by_time.chunk(0.0, start)
        by_time.chunk(start * dt, 50)  # rows start .. start+49 handed out; 20 of them ran
        by_time.follow(late, setpoint, None, last_chunk_ran=True, ran_to_end=False)
        assert ANYWHERE.violations(by_time.chunk(late, 50), setpoint, velocity, dt, tips)  # time alone: refused
        cursor = PlanCursor(rows, 0.0, dt)
        cursor.chunk(0.0, start)
        cursor.chunk(start * dt, 50)
        cursor.follow(late, setpoint, None, last_chunk_ran=True, ran_to_end=False, setpoint=setpoint, rows_run=20)
        going_on = cursor.chunk(late, 50)
        assert np.array_equal(going_on[0], rows[start + 20])
        assert ANYWHERE.violations(going_on, setpoint, velocity, dt, tips) == []


def test_a_chunk_cut_short_while_the_arm_rests_goes_on_at_the_next_gripper_row():
    """The arm rests while the gripper closes (rows with the same arm target, the width
    stepping down among them), and the chunk was cut there. The setpoint matches every
    resting row: the count of rows sent says which one ran last. Sync mode: time says
    the same. Realtime, observed late: time alone would skip the gripper's step."""
    _, rows = pick_place_rows()
    dt = SPEC.hold_interval_s
    still = np.abs(np.diff(rows[:, :7], axis=0)).max(axis=1) == 0
    step = int(np.nonzero(still & (np.diff(rows[:, 7]) != 0))[0][0]) + 1  # the first narrower row
    assert still[step - 10:step + 10].all()  # the arm rests on both sides of it
    for ran, late in ((step + 5, 0.0), (step - 3, 0.15)):  # rows before `ran` were sent
        cursor = PlanCursor(rows, 0.0, dt)
        cursor.chunk(0.0, ran + 10)
        t = ran * dt + late
        if late:
            assert PlanCursor(rows, 0.0, dt).index(t) > step  # where time alone goes on
        cursor.follow(t, rows[ran - 1, :7], None, last_chunk_ran=True, ran_to_end=False,
                      setpoint=rows[ran - 1, :7], rows_run=ran)
        assert np.array_equal(cursor.chunk(t, 50)[0], rows[ran])


def test_an_arm_blocked_far_from_its_target_resumes_from_the_setpoint():
    """The last chunk ran to its end, but something holds the arm 0.3 rad short of its
    target (beyond OFF_PLAN_RAD): the plan restarts from rest, from the setpoint the
    controller holds, not from the measured arm, which the envelope would refuse."""
    planner, rows = pick_place_rows()
    dt = SPEC.hold_interval_s
    mid = int(np.argmax(np.abs(np.diff(rows[:, :7], axis=0)).max(axis=1)))
    setpoint = rows[mid - 1, :7]
    blocked = setpoint - np.array([0.3, 0, 0, 0, 0, 0, 0])
    later = mid * dt + 1.0  # it stood still a second
    for restart_at, refused in ((None, True), (setpoint, False)):
        cursor = PlanCursor(rows, 0.0, dt)
        cursor.chunk(0.0, mid)
        cursor.follow(later, blocked, planner.retime, last_chunk_ran=True, ran_to_end=True, setpoint=restart_at)
        restarted = cursor.chunk(later, 50)
        assert bool(ANYWHERE.violations(restarted, setpoint, None, dt, tips)) == refused


def test_a_pause_whose_stopping_rows_left_the_plan_resumes_from_the_held_target():
    """A pause cut a chunk short at speed and its stopping rows brought the target to rest
    between two of the plan's rows. The measured arm is near the plan's recent rows (within
    OFF_PLAN_RAD), yet going on after the rows handed out jumps the resting target (seen:
    the first chunk after a resume refused by the envelope); the observation says the target
    is no row of the plan, so the move restarts from it."""
    planner, rows = pick_place_rows()
    dt = SPEC.hold_interval_s
    mid = int(np.argmax(np.abs(np.diff(rows[:, :7], axis=0)).max(axis=1)))  # at speed
    cursor = PlanCursor(rows, 0.0, dt)
    cursor.chunk(0.0, mid + 12)
    held = rows[mid + 9, :7] + 0.5 * (rows[mid + 10, :7] - rows[mid + 9, :7])  # where the stop came to rest
    later = (mid + 12) * dt + 1.5  # paused 1.5 s
    going_on = PlanCursor(rows, 0.0, dt)
    going_on.chunk(0.0, mid + 12)
    going_on.resync(later, held, planner.retime, held)  # the measured arm alone: near enough the plan
    assert ANYWHERE.violations(going_on.chunk(later, 50), held, None, dt, tips)  # refused
    cursor.follow(later, held, planner.retime, last_chunk_ran=True, ran_to_end=False, setpoint=held,
                  rows_run=mid + 10)
    restarted = cursor.chunk(later, 50)
    assert np.abs(restarted[0, :7] - held).max() < 0.01
    assert ANYWHERE.violations(restarted, held, None, dt, tips) == []
