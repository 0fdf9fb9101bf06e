"""lab_sim in sync mode holds a command stamped after its sim time until sim time
reaches the stamp (the bridge sends a row while the row before runs): which command
acts when, and which boundaries count as commanded."""
from __future__ import annotations

from types import SimpleNamespace

from trajectory_msgs.msg import JointTrajectory

from labference_ros.nodes.lab_sim import LabSim, _has_stamp, _stamp_ns

MS = 1_000_000


def trajectory(stamp_ms: int) -> JointTrajectory:
    msg = JointTrajectory()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ms * MS, 1_000_000_000)
    return msg


def sim_at(now_ms: int, step_mode: str = "sync") -> SimpleNamespace:
    """What on_trajectory looks at: a loaded scene at sim time now_ms; the trajectories it
    applies are appended to .applied."""
    sim = SimpleNamespace(loaded=True, step_mode=step_mode, backend=SimpleNamespace(sim_time=now_ms / 1000),
                          ahead_arm=None, ahead_gripper=None, arm_stamps=[], applied=[])
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
    assert sim.applied == [now] and sim.ahead_arm is ahead
    sim.backend.sim_time = 0.02
    LabSim._apply_commands_due(sim)
    assert sim.applied == [now, ahead] and sim.ahead_arm is None


def test_a_held_command_whose_boundary_is_reached_is_applied_before_the_next_replaces_it():
    # The row after arrives once sim time has reached the held row's boundary but before
    # the held row was applied: both rows act, in order.
    sim = sim_at(0)
    (row_20,) = send(sim, 20)
    sim.backend.sim_time = 0.02
    (row_40,) = send(sim, 40)
    assert sim.applied == [row_20] and sim.ahead_arm is row_40


def test_a_command_for_now_replaces_a_held_one_and_its_boundary_still_counts_as_commanded():
    # A pause: the stop trajectory, stamped at the running interval's start, replaces the
    # row sent ahead; the advance for that row's boundary must not wait for it forever.
    sim = sim_at(20)
    ahead, stop = send(sim, 40, 20)
    assert sim.applied == [stop] and sim.ahead_arm is None
    assert _has_stamp(sim.arm_stamps, _stamp_ns(ahead.header.stamp))
    assert not _has_stamp(sim.arm_stamps, _stamp_ns(trajectory(60).header.stamp))


def test_realtime_mode_applies_every_command_on_arrival():
    sim = sim_at(0, step_mode="realtime")
    (ahead,) = send(sim, 500)
    assert sim.applied == [ahead] and sim.ahead_arm is None
