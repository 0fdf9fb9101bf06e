"""lab_sim's sync protocol (sim/sync_protocol.py): in sync mode the commands stamped
after sim time are held until sim time reaches each stamp (the bridge sends several
rows for one advance, and the next advance's rows while one runs): which command acts
when, which boundaries count as commanded, what an advance waits for, and which
balance readings each frame keeps and is owed."""
from __future__ import annotations

import math
from types import SimpleNamespace

from labference.msg import BalanceReading
from labference.srv import Advance
from trajectory_msgs.msg import JointTrajectory

from labference_ros.sim.sync_protocol import (CommandedBoundaries, DisplayReadings, HeldCommands, MeasurementGrid,
                                              advance_wants, stamp_ns)

MS = 1_000_000


def trajectory(stamp_ms: int) -> JointTrajectory:
    msg = JointTrajectory()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ms * MS, 1_000_000_000)
    return msg


def held_at(sync: bool = True) -> SimpleNamespace:
    """Held commands whose applied arm and gripper commands are appended to .applied and .gripped."""
    sim = SimpleNamespace(applied=[], gripped=[])
    sim.commands = HeldCommands(sync, sim.applied.append, sim.gripped.append, kept=4)
    return sim


def send(sim: SimpleNamespace, now_ms: int, *stamps_ms: int) -> list[JointTrajectory]:
    """Trajectories stamped stamps_ms, delivered at sim time now_ms in that order."""
    messages = [trajectory(ms) for ms in stamps_ms]
    for msg in messages:
        sim.commands.take_arm(msg, now_ms / 1000)
    return messages


def test_a_command_for_a_later_boundary_waits_for_it():
    sim = held_at()
    now, ahead = send(sim, 0, 0, 20)
    assert sim.applied == [now] and list(sim.commands.arm) == [ahead]
    sim.commands.apply_due(0.02)
    assert sim.applied == [now, ahead] and not sim.commands


def test_the_rows_of_one_advance_act_each_at_its_own_boundary():
    sim = held_at()
    rows = send(sim, 0, 0, 20, 40, 60)
    assert sim.applied == rows[:1] and list(sim.commands.arm) == rows[1:]
    for stamp_ms in (10, 20, 30, 40, 50, 60):
        sim.commands.apply_due(stamp_ms / 1000)
    assert sim.applied == rows and not sim.commands.arm


def test_held_commands_whose_boundaries_sim_time_passed_at_once_act_in_stamp_order():
    sim = held_at()
    rows = send(sim, 0, 20, 40, 60)
    sim.commands.apply_due(0.05)
    assert sim.applied == rows[:2] and list(sim.commands.arm) == rows[2:]


def test_gripper_commands_are_held_and_replaced_like_arm_commands():
    sim = held_at()
    held_40, held_60, stop = (trajectory(ms) for ms in (40, 60, 20))  # any stamped message will do
    for msg in (held_40, held_60):
        sim.commands.take_gripper(msg, 0.02)
    assert not sim.gripped and list(sim.commands.gripper) == [held_40, held_60]
    sim.commands.take_gripper(stop, 0.02)
    assert sim.gripped == [stop] and not sim.commands.gripper
    assert stamp_ns(held_60.header.stamp) in sim.commands.gripper_stamps


def test_a_held_command_whose_boundary_is_reached_is_applied_before_the_next_replaces_it():
    # The row after arrives once sim time has reached the held row's boundary but before
    # the held row was applied: both rows act, in order.
    sim = held_at()
    (row_20,) = send(sim, 0, 20)
    (row_40,) = send(sim, 20, 40)
    assert sim.applied == [row_20] and list(sim.commands.arm) == [row_40]


def test_a_command_for_now_replaces_the_held_ones_and_their_boundaries_still_count_as_commanded():
    # A pause: the stop trajectory, stamped at the running advance's start, replaces the
    # rows sent ahead; the advances for those rows' boundaries must not wait for them forever.
    sim = held_at()
    *ahead, stop = send(sim, 20, 40, 60, 20)
    assert sim.applied == [stop] and not sim.commands.arm
    assert all(stamp_ns(msg.header.stamp) in sim.commands.arm_stamps for msg in ahead)
    assert stamp_ns(trajectory(80).header.stamp) not in sim.commands.arm_stamps
    assert sim.commands.arrived([stamp_ns(msg.header.stamp) for msg in ahead], [])
    assert not sim.commands.arrived([], [stamp_ns(stop.header.stamp)])  # no gripper command came


def test_a_held_command_replaces_the_held_ones_from_its_boundary_on():
    # JTC replace semantics for what waits: a new plan from 60 ms drops the rows held for
    # 60 and 80 ms, and the row for 40 ms still acts first.
    sim = held_at()
    row_40, _, _, new_60 = send(sim, 20, 40, 60, 80, 60)
    assert list(sim.commands.arm) == [row_40, new_60]


def test_a_new_timeline_drops_the_held_commands_and_the_commanded_boundaries():
    sim = held_at()
    (ahead,) = send(sim, 0, 20)
    sim.commands.clear()
    assert not sim.commands and stamp_ns(ahead.header.stamp) not in sim.commands.arm_stamps


def test_commanded_boundaries_keep_the_newest_and_allow_a_nanosecond():
    kept = CommandedBoundaries(2)
    for stamp in (1_000, 2_000, 3_000):
        kept.add(stamp)
    assert 1_000 not in kept and 2_000 in kept and 3_001 in kept and 2_998 not in kept
    kept.clear()
    assert 3_000 not in kept


def test_realtime_mode_applies_every_command_on_arrival():
    sim = held_at(sync=False)
    (ahead,) = send(sim, 0, 500)
    assert sim.applied == [ahead] and not sim.commands.arm


def advance(start_ms: int, duration_s: float, arm_ms=(), gripper_ms=(), require_arm=False) -> Advance.Request:
    req = Advance.Request(duration_s=duration_s, require_arm_command=require_arm)
    req.command_stamp = trajectory(start_ms).header.stamp
    req.arm_command_stamps = [trajectory(ms).header.stamp for ms in arm_ms]
    req.gripper_command_stamps = [trajectory(ms).header.stamp for ms in gripper_ms]
    return req


def test_an_advance_waits_for_the_boundaries_it_names_within_its_interval():
    arm, gripper, refused = advance_wants(advance(20, 0.06, arm_ms=(20, 40, 60), gripper_ms=(40,)), 0.02)
    assert refused == "" and arm == [20 * MS, 40 * MS, 60 * MS] and gripper == [40 * MS]
    arm, _, _ = advance_wants(advance(20, 0.02, require_arm=True), 0.02)
    assert arm == [20 * MS]


def test_an_advance_is_refused_ahead_of_sim_time_with_a_bad_duration_or_a_stamp_outside_its_interval():
    assert "is ahead of sim time" in advance_wants(advance(40, 0.02), 0.02)[2]
    assert advance_wants(advance(20, math.nan), 0.02)[2] == "bad duration nan"
    assert advance_wants(advance(20, 10.5), 0.02)[2] == "bad duration 10.5"
    assert "lies outside the interval [0.020, 0.040) s" in advance_wants(advance(20, 0.02, arm_ms=(40,)), 0.02)[2]
    assert advance_wants(advance(20, 0.0, arm_ms=(20,)), 0.02)[2] == ""  # a zero advance still names its boundary


def reading(stamp_ms: int, grams: float, **flags) -> BalanceReading:
    msg = BalanceReading(displayed_g=grams, stable=True, valid=True, **flags)
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ms * MS, 1_000_000_000)
    return msg


def display(start_ms: int = 0, sent: dict | None = None) -> DisplayReadings:
    """A timeline from start_ms, and when (wall ns) its wrenches went out, by stamp."""
    readings = DisplayReadings()
    readings.restart(start_ms * MS)
    readings.wrench_sent_ns.update(sent or {})
    return readings


def test_a_reading_of_this_timeline_is_kept_with_what_the_display_shows():
    readings = display(sent={480 * MS: 1_000})
    readings.note(reading(480, 12.5), published_ns=2_000, sim_now_ns=500 * MS)
    readings.note(reading(490, 99.0, overload=True), published_ns=0, sim_now_ns=500 * MS)
    assert readings.readings[480 * MS] == (12.5, True) and math.isnan(readings.readings[490 * MS][0])


def test_a_reading_published_before_this_timelines_wrench_of_its_stamp_is_dropped():
    # Restored to 400 ms: the old timeline's reading of 480 ms, still in flight then, is
    # taken at a frame after this timeline sent its own 480 ms wrench.
    readings = display(start_ms=400, sent={480 * MS: 5_000})
    readings.note(reading(480, 99.0), published_ns=4_000, sim_now_ns=500 * MS)
    assert readings.readings == {}
    readings.note(reading(480, 12.5), published_ns=6_000, sim_now_ns=500 * MS)
    assert readings.readings == {480 * MS: (12.5, True)}


def test_readings_stamped_outside_the_timeline_are_dropped_whatever_their_time():
    readings = display(start_ms=400)
    readings.note(reading(390, 1.0), published_ns=0, sim_now_ns=500 * MS)  # before the restore point
    readings.note(reading(510, 1.0), published_ns=0, sim_now_ns=500 * MS)  # ahead of sim time
    assert readings.readings == {}


def test_a_frame_shows_the_newest_reading_display_lag_before_it_and_is_owed_the_last_wrench_so_stamped():
    readings = display()
    for ms in (60, 70, 80):
        readings.sending_wrench(ms * MS, wall_ns=ms)
        readings.wrench_sent(ms * MS)
    readings.note(reading(60, 1.0), published_ns=100, sim_now_ns=100 * MS)
    assert readings.for_frame(0.1) == ((1.0, True), 80 * MS)  # 80 ms is DISPLAY_LAG_S before 100 ms
    readings.note(reading(80, 2.0), published_ns=100, sim_now_ns=100 * MS)
    assert readings.for_frame(0.1) == ((2.0, True), None)


def test_measurements_and_frames_keep_their_grids_from_the_restart():
    grid = MeasurementGrid(measure_period=0.01, camera_period=0.1)
    assert grid.due(0.0) == (True, True)
    assert grid.due(0.005) == (False, False) and grid.due(0.01) == (True, False)
    assert grid.due(0.1) == (True, True) and grid.due(0.15) == (True, False)
    grid.restart(0.15)
    assert grid.due(0.15) == (True, True)
