"""lab_sim in sync mode holds the commands stamped after its sim time until sim time
reaches each stamp (the bridge sends several rows for one advance, and the next
advance's rows while one runs): which command acts when, and which boundaries count
as commanded."""
from __future__ import annotations

from collections import deque
from types import SimpleNamespace

from trajectory_msgs.msg import JointTrajectory

from labference_ros.nodes.lab_sim import CommandedBoundaries, LabSim, _stamp_ns

MS = 1_000_000


def trajectory(stamp_ms: int) -> JointTrajectory:
    msg = JointTrajectory()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ms * MS, 1_000_000_000)
    return msg


def sim_at(now_ms: int, step_mode: str = "sync") -> SimpleNamespace:
    """What on_trajectory looks at: a loaded scene at sim time now_ms; the trajectories it
    applies are appended to .applied."""
    sim = SimpleNamespace(loaded=True, step_mode=step_mode, backend=SimpleNamespace(sim_time=now_ms / 1000),
                          held_arm=deque(), held_gripper=deque(), arm_stamps=CommandedBoundaries(4), applied=[])
    sim._apply_commands_due = lambda: LabSim._apply_commands_due(sim)
    sim._take_command = lambda *args: LabSim._take_command(sim, *args)
    sim._is_ahead = lambda stamp: LabSim._is_ahead(sim, stamp)
    sim._apply_trajectory = sim.applied.append
    sim._wake_waiter = lambda: None
    return sim


def send(sim: SimpleNamespace, *stamps_ms: int) -> list[JointTrajectory]:
    """Trajectories stamped stamps_ms, delivered to lab_sim in that order."""
    messages = [trajectory(ms) for ms in stamps_ms]
    for msg in messages:
        LabSim.on_trajectory(sim, msg)
    return messages


def test_a_command_for_a_later_boundary_waits_for_it():
    sim = sim_at(0)
    now, ahead = send(sim, 0, 20)
    assert sim.applied == [now] and list(sim.held_arm) == [ahead]
    sim.backend.sim_time = 0.02
    LabSim._apply_commands_due(sim)
    assert sim.applied == [now, ahead] and not sim.held_arm


def test_the_rows_of_one_advance_act_each_at_its_own_boundary():
    sim = sim_at(0)
    rows = send(sim, 0, 20, 40, 60)
    assert sim.applied == rows[:1] and list(sim.held_arm) == rows[1:]
    for stamp_ms in (10, 20, 30, 40, 50, 60):
        sim.backend.sim_time = stamp_ms / 1000
        LabSim._apply_commands_due(sim)
    assert sim.applied == rows and not sim.held_arm


def test_held_commands_whose_boundaries_sim_time_passed_at_once_act_in_stamp_order():
    sim = sim_at(0)
    rows = send(sim, 20, 40, 60)
    sim.backend.sim_time = 0.05
    LabSim._apply_commands_due(sim)
    assert sim.applied == rows[:2] and list(sim.held_arm) == rows[2:]


def test_gripper_commands_are_held_and_replaced_like_arm_commands():
    sim = sim_at(20)
    sim.gripper_stamps, sim.gripped = CommandedBoundaries(4), []
    sim._apply_gripper = sim.gripped.append
    held_40, held_60, stop = (trajectory(ms) for ms in (40, 60, 20))  # any stamped message will do
    for msg in (held_40, held_60):
        LabSim.on_gripper(sim, msg)
    assert not sim.gripped and list(sim.held_gripper) == [held_40, held_60]
    LabSim.on_gripper(sim, stop)
    assert sim.gripped == [stop] and not sim.held_gripper and _stamp_ns(held_60.header.stamp) in sim.gripper_stamps


def test_a_held_command_whose_boundary_is_reached_is_applied_before_the_next_replaces_it():
    # The row after arrives once sim time has reached the held row's boundary but before
    # the held row was applied: both rows act, in order.
    sim = sim_at(0)
    (row_20,) = send(sim, 20)
    sim.backend.sim_time = 0.02
    (row_40,) = send(sim, 40)
    assert sim.applied == [row_20] and list(sim.held_arm) == [row_40]


def test_a_command_for_now_replaces_the_held_ones_and_their_boundaries_still_count_as_commanded():
    # A pause: the stop trajectory, stamped at the running advance's start, replaces the
    # rows sent ahead; the advances for those rows' boundaries must not wait for them forever.
    sim = sim_at(20)
    *ahead, stop = send(sim, 40, 60, 20)
    assert sim.applied == [stop] and not sim.held_arm
    assert all(_stamp_ns(msg.header.stamp) in sim.arm_stamps for msg in ahead)
    assert _stamp_ns(trajectory(80).header.stamp) not in sim.arm_stamps


def test_a_held_command_replaces_the_held_ones_from_its_boundary_on():
    # JTC replace semantics for what waits: a new plan from 60 ms drops the rows held for
    # 60 and 80 ms, and the row for 40 ms still acts first.
    sim = sim_at(20)
    row_40, _, _, new_60 = send(sim, 40, 60, 80, 60)
    assert list(sim.held_arm) == [row_40, new_60]


def test_commanded_boundaries_keep_the_newest_and_allow_a_nanosecond():
    kept = CommandedBoundaries(2)
    for stamp in (1_000, 2_000, 3_000):
        kept.add(stamp)
    assert 1_000 not in kept and 2_000 in kept and 3_001 in kept and 2_998 not in kept
    kept.clear()
    assert 3_000 not in kept


def test_realtime_mode_applies_every_command_on_arrival():
    sim = sim_at(0, step_mode="realtime")
    (ahead,) = send(sim, 500)
    assert sim.applied == [ahead] and not sim.held_arm
