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


def test_interpolated_targets_are_bit_identical_to_the_array_formula():
    """The recorded episodes (test/golden) were stepped with numpy's (1 - a) * q0 + a * q1."""
    np = pytest.importorskip("numpy")
    f = TrajectoryFollower()
    first = tuple(q + 0.013 * (k + 1) for k, q in enumerate(HOME))
    second = tuple(q - 0.37 for q in first)
    assert f.replace(traj([(0.02, first), (0.06, second)], stamp_s=1.0), now=1.0, current_targets=HOME) == ""
    (end_1, end_2), (point_1, point_2) = f.times, f.points
    for t in (1.0013, 1.007, 1.0199, 1.021, 1.0333, 1.0599):
        rel = t - f.start_t
        q0, q1, t0, t1 = (f.origin, point_1, 0.0, end_1) if rel <= end_1 else (point_1, point_2, end_1, end_2)
        a = (rel - t0) / (t1 - t0)
        expected = tuple(float(x) for x in (1 - a) * np.asarray(q0) + a * np.asarray(q1))
        got = f.target_at(t)
        assert [x.hex() for x in got] == [x.hex() for x in expected]


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
