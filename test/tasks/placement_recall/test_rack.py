"""The rack's labels, hole frames and rigid transforms (eq. 10), without a simulator."""
import math

import numpy as np
import pytest

from labference_ros.tasks.placement_recall.rack import (LABELS, RackGeometry, RackPose, hole_positions, hole_under,
                                                        parse_label, pose_matrix, quat_of, rebuilt, relative,
                                                        rotation_error_deg)

GEOMETRY = RackGeometry()
POSE = RackPose((0.48, 0.08, 0.036), math.radians(7.0))


def test_twelve_labels_a1_to_c4_and_bad_labels_are_refused():
    assert LABELS == ("A1", "A2", "A3", "A4", "B1", "B2", "B3", "B4", "C1", "C2", "C3", "C4")
    assert parse_label("B3") == (1, 2)
    for bad in ("D1", "A0", "A5", "a1", "B", "B10"):
        with pytest.raises(ValueError, match="is not a rack hole"):
            parse_label(bad)


def test_holes_lie_on_the_grid_with_a1_at_the_minus_x_plus_y_corner():
    local = {label: GEOMETRY.local_hole(label) for label in LABELS}
    assert local["A1"][0] < local["A4"][0] and local["A1"][1] > local["C1"][1]
    assert math.isclose(np.linalg.norm(local["A1"] - local["A2"]), GEOMETRY.pitch_m)
    assert math.isclose(np.linalg.norm(local["A1"] - local["B1"]), GEOMETRY.pitch_m)
    assert np.allclose(sum(local.values()) / len(local), 0.0)


def test_a_point_over_a_hole_names_it_in_any_pose_and_a_guide_names_none():
    world = hole_positions(GEOMETRY, POSE)
    for label, p in world.items():
        assert hole_under(p, GEOMETRY, POSE) == label
        # Just inside the opening's edge, then just over the guide beyond it.
        inside = p + POSE.rotation() @ np.array([GEOMETRY.hole_half_m - 1e-4, 0.0, 0.0])
        assert hole_under(inside, GEOMETRY, POSE) == label
    on_guide = (world["B2"] + world["B3"]) / 2
    assert hole_under(on_guide, GEOMETRY, POSE) == ""
    assert hole_under(np.array(POSE.center) + [0.5, 0.0, 0.0], GEOMETRY, POSE) == ""


def test_a_half_turn_puts_every_hole_where_its_mirror_was():
    """What a memoryless system that returns to the old world position meets: after a
    180 degree turn about the centre, the old position of A1 holds C4, of B2 holds B3."""
    turned = RackPose(POSE.center, POSE.yaw_rad + math.pi)
    before = hole_positions(GEOMETRY, POSE)
    mirror = {"A1": "C4", "A2": "C3", "B2": "B3", "B3": "B2", "C4": "A1"}
    for label, other in mirror.items():
        assert hole_under(before[label], GEOMETRY, turned) == other
    assert all(hole_under(before[label], GEOMETRY, turned) != label for label in LABELS)


def test_eq10_rebuilds_a_pose_relative_to_the_moved_rack():
    tube = pose_matrix([0.45, 0.12, 0.05], [math.cos(0.2), 0.1, 0.05, math.sin(0.2)])
    t_rack_tube = relative(POSE.matrix(), tube)
    moved = RackPose((0.40, -0.02, 0.036), POSE.yaw_rad + math.pi)
    rebuilt_tube = rebuilt(moved.matrix(), t_rack_tube)
    assert np.allclose(relative(moved.matrix(), rebuilt_tube), t_rack_tube)
    assert not np.allclose(rebuilt_tube, tube)
    assert rotation_error_deg(rebuilt_tube, moved.matrix() @ t_rack_tube) < 1e-6


@pytest.mark.parametrize("quat", [(1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1), (0.5, 0.5, -0.5, 0.5),
                                  (math.cos(1.4), 0.0, 0.0, math.sin(1.4))])
def test_quaternions_survive_a_round_trip_through_a_matrix(quat):
    back = quat_of(pose_matrix([0, 0, 0], quat))
    sign = 1.0 if quat[0] >= 0 else -1.0
    want = [sign * q for q in quat]
    if abs(want[0]) < 1e-12:  # w = 0: q and -q are one rotation
        assert np.allclose(back, want) or np.allclose(back, [-q for q in want])
    else:
        assert np.allclose(back, want)
