"""JointTrajectoryController semantics of lab_sim's trajectory follower."""
from __future__ import annotations

import math

import pytest
from builtin_interfaces.msg import Duration
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from labference_ros.sim.backend import ARM_JOINT_NAMES
from labference_ros.sim.trajectory import TrajectoryFollower, pack_checkpoint, unpack_checkpoint

HOME = (0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8)


def traj(points, names=ARM_JOINT_NAMES, stamp_s=0.0):
    msg = JointTrajectory(joint_names=list(names))
    msg.header.stamp.sec, msg.header.stamp.nanosec = int(stamp_s), int(round((stamp_s % 1) * 1e9))
    for t, q in points:
        msg.points.append(JointTrajectoryPoint(positions=list(q), time_from_start=Duration(
            sec=int(t), nanosec=int(round((t % 1) * 1e9)))))
    return msg


def test_interpolates_from_current_target_and_holds_last_point():
    f = TrajectoryFollower()
    goal = tuple(q + 0.2 for q in HOME)
    assert f.replace(traj([(1.0, goal)], stamp_s=2.0), now=2.0, current_targets=HOME) == ""
    mid = f.target_at(2.5)
    assert mid == pytest.approx(tuple(q + 0.1 for q in HOME))
    assert f.target_at(10.0) == pytest.approx(goal)


def test_new_trajectory_replaces_the_old_one_from_its_start():
    f = TrajectoryFollower()
    f.replace(traj([(1.0, tuple(q + 0.2 for q in HOME))]), now=0.0, current_targets=HOME)
    other = tuple(q - 0.1 for q in HOME)
    f.replace(traj([(0.5, other)]), now=0.4, current_targets=HOME)
    assert f.target_at(0.9) == pytest.approx(other)


@pytest.mark.parametrize("msg, why", [
    (traj([]), "empty"),
    (traj([(1.0, HOME)], names=("a", "b", "c", "d", "e", "f", "g")), "unknown joints"),
    (traj([(1.0, (math.nan,) + HOME[1:])]), "not finite"),
    (traj([(1.0, (5.0,) + HOME[1:])]), "outside limits"),
    (traj([(1.0, HOME[:6])], names=ARM_JOINT_NAMES[:6]), "expected 7"),
    (traj([(1.0, HOME), (0.5, HOME)]), "must increase"),
])
def test_bad_trajectories_are_rejected_whole_with_a_reason(msg, why):
    f = TrajectoryFollower()
    f.replace(traj([(1.0, HOME)]), now=0.0, current_targets=HOME)
    before = f.to_json()
    reason = f.replace(msg, now=0.5, current_targets=HOME)
    assert why in reason
    assert f.to_json() == before  # nothing half-applied


def test_checkpoint_framing_round_trips_and_rejects_truncation():
    f = TrajectoryFollower()
    f.replace(traj([(1.0, HOME)]), now=0.0, current_targets=HOME)
    blob = pack_checkpoint(b"\x01\x02state", f)
    state, g = unpack_checkpoint(blob)
    assert state == b"\x01\x02state" and g.to_json() == f.to_json()
    with pytest.raises(ValueError):
        unpack_checkpoint(blob[:12])
