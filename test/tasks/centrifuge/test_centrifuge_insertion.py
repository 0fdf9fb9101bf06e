"""The centrifuge insertion predicate on scripted tube states (issue 14): each
threshold on both sides, release, the 0.5 s dwell, a tube on the rim, and the
rotor's yaw changing world coordinates but not the verdict."""
from __future__ import annotations

import math

import numpy as np
import pytest

from labference_ros.core.measurements import LEFT_FINGER, RIGHT_FINGER, ObjectMeasurement
from labference_ros.tasks.centrifuge.contract import contract_for
from labference_ros.tasks.centrifuge.insertion import ROTOR, SeatTracker, seat_check
from labference_ros.tasks.centrifuge.rotor import RotorPose, opposite, slot_frames

CONTRACT = contract_for("extended")
POSE = RotorPose(center=(0.5, 0.1, 0.12), yaw_rad=0.4)
FRAMES = slot_frames(CONTRACT.rotor, POSE)


def _quaternion_from_z(up) -> tuple[float, float, float, float]:
    """w, x, y, z of the rotation taking the body's +z onto `up`."""
    up = np.asarray(up, float) / np.linalg.norm(up)
    z = np.array([0.0, 0.0, 1.0])
    axis = np.cross(z, up)
    s = np.linalg.norm(axis)
    if s < 1e-12:
        return (1.0, 0.0, 0.0, 0.0) if up[2] > 0 else (0.0, 1.0, 0.0, 0.0)
    angle = math.atan2(s, float(z @ up))
    axis /= s
    h = angle / 2
    return (math.cos(h), *(math.sin(h) * axis))


def tube_in(slot: int, depth_fraction=0.9, axial_deg=0.0, radial_m=0.0, contacts=(ROTOR,), speed=0.0,
            frames=FRAMES) -> ObjectMeasurement:
    """A tube whose bottom is depth_fraction of the socket depth past slot's mouth,
    radial_m off its axis, and whose axis is tilted axial_deg from the socket's."""
    f = frames[slot]
    side = np.cross(f.axis, [0.0, 0.0, 1.0])
    side /= np.linalg.norm(side)
    bottom = f.mouth + depth_fraction * CONTRACT.rotor.socket_depth_m * f.axis + radial_m * side
    # Tilt the tube's downward axis by axial_deg about `side`'s perpendicular.
    tilt = math.radians(axial_deg)
    normal = np.cross(f.axis, side)
    down = math.cos(tilt) * f.axis + math.sin(tilt) * normal
    center = bottom - down * CONTRACT.tube.length_m / 2
    return ObjectMeasurement("tube_a", "tube", tuple(center), _quaternion_from_z(-down), speed, 0.0, tuple(contacts))


def test_a_tube_deep_aligned_centred_released_and_supported_is_seated():
    check = seat_check(tube_in(4), FRAMES, CONTRACT)
    assert check.slot == 4 and check.seated and check.failures == ()
    assert check.axial_error_deg == pytest.approx(0.0, abs=1e-6)
    assert check.depth_fraction == pytest.approx(0.9)


@pytest.mark.parametrize("axial_deg, seated", [(9.0, True), (11.0, False)])
def test_axial_error_ten_degrees(axial_deg, seated):
    check = seat_check(tube_in(2, axial_deg=axial_deg), FRAMES, CONTRACT)
    assert check.axial_error_deg == pytest.approx(axial_deg, abs=1e-6)
    assert check.seated is seated
    assert check.failures == (() if seated else ("aligned",))


@pytest.mark.parametrize("fraction, seated", [(0.59, False), (0.61, True)])
def test_depth_sixty_percent_of_the_socket(fraction, seated):
    check = seat_check(tube_in(7, depth_fraction=fraction), FRAMES, CONTRACT)
    assert check.seated is seated
    assert check.failures == (() if seated else ("deep",))


@pytest.mark.parametrize("radial_m, seated", [(0.00099, True), (0.00104, True), (0.00106, False), (0.0012, False)])
def test_radial_offset_bounded_by_the_physical_clearance(radial_m, seated):
    # Paper 8.1: the radial tolerance of an aligned tube is the 1 mm clearance itself; only
    # a contact's penetration (50 um, a measurement resolution) lies beyond it.
    assert CONTRACT.clearance_m == pytest.approx(0.001)
    assert CONTRACT.insertion.contact_penetration_m == pytest.approx(0.00005)
    check = seat_check(tube_in(0, radial_m=radial_m), FRAMES, CONTRACT)
    assert check.seated is seated
    assert check.failures == (() if seated else ("centred",))


@pytest.mark.parametrize("extra_m, seated", [(0.00013, True), (0.00016, False)])
def test_a_tilted_tube_has_the_clearance_the_bore_leaves_it_at_its_tilt(extra_m, seated):
    # At 9 degrees the bore lets the bottom's centre sit 7.5 mm * (1 - cos 9 deg) = 0.092 mm
    # further out than an aligned tube's: 1.092 mm, and 0.05 mm of contact penetration: 1.142 mm.
    check = seat_check(tube_in(2, axial_deg=9.0, radial_m=0.001 + extra_m), FRAMES, CONTRACT)
    assert check.seated is seated
    assert check.failures == (() if seated else ("centred",))


def test_a_tube_still_held_is_not_seated():
    held = seat_check(tube_in(5, contacts=(ROTOR, LEFT_FINGER, RIGHT_FINGER)), FRAMES, CONTRACT)
    assert not held.seated and held.failures == ("released",)
    loose = seat_check(tube_in(5, contacts=()), FRAMES, CONTRACT)  # in the socket but touching nothing
    assert not loose.seated and loose.failures == ("supported",)


def test_a_tube_resting_on_the_rim_is_not_seated():
    # Its bottom sits on the mouth's edge, above the socket, leaning on the rotor.
    rim = tube_in(9, depth_fraction=-0.05, radial_m=CONTRACT.rotor.bore_radius_m + 0.002, axial_deg=20.0)
    check = seat_check(rim, FRAMES, CONTRACT)
    assert check.slot == 9 and not check.seated
    assert {"in_socket", "deep", "centred", "aligned"} <= set(check.failures)


@pytest.mark.parametrize("held_s, confirmed", [(0.4, False), (0.6, True)])
def test_support_and_release_must_hold_half_a_second(held_s, confirmed):
    tracker = SeatTracker(CONTRACT)
    seated = seat_check(tube_in(3), FRAMES, CONTRACT)
    moving = seat_check(tube_in(3, speed=0.05), FRAMES, CONTRACT)
    assert tracker.update(0.0, moving) is None
    got = [tracker.update(round(0.1 + 0.01 * k, 9), seated) for k in range(int(round(held_s / 0.01)) + 1)]
    assert (3 in got) is confirmed
    # A break restarts the dwell: the slot is confirmed again only after another 0.5 s.
    tracker.update(2.0, moving)
    assert tracker.update(2.01, seated) is None and tracker.update(2.4, seated) is None
    assert tracker.update(2.52, seated) == 3


def test_rotor_yaw_moves_every_slot_but_keeps_the_local_relations():
    turned = slot_frames(CONTRACT.rotor, RotorPose(center=(0.5, 0.1, 0.12), yaw_rad=0.4 + math.pi / 3))
    assert not np.allclose(turned[4].mouth, FRAMES[4].mouth)
    assert seat_check(tube_in(4, frames=turned), turned, CONTRACT).slot == 4
    assert seat_check(tube_in(4, frames=turned), FRAMES, CONTRACT).slot != 4
    # Opposite slots face each other across the rotor axis in any pose.
    for frames in (FRAMES, turned):
        j, k = 1, opposite(1, CONTRACT.rotor.n_slots)
        midpoint = (frames[j].mouth + frames[k].mouth) / 2
        assert np.allclose(midpoint, POSE.center)
    assert [opposite(j, 12) for j in (0, 1, 2, 6, 11)] == [6, 7, 8, 0, 5]
    with pytest.raises(ValueError):
        opposite(0, 11)


def test_the_vectorised_shortlist_gives_the_socket_and_numbers_of_the_scalar_pass():
    """seat_check narrows the sockets down with one vectorised pass but judges with the
    per-socket numbers: the same slot and the same floats as a scalar pass over all."""
    from labference_ros.tasks.centrifuge.insertion import socket_offsets, tube_bottom

    rng = np.random.default_rng(7)
    judged = 0
    for _ in range(400):
        slot = int(rng.integers(len(FRAMES)))
        tube = tube_in(slot, depth_fraction=float(rng.uniform(-0.5, 1.2)), axial_deg=float(rng.uniform(0, 20)),
                       radial_m=float(rng.uniform(0, 0.004)))
        bottom, _down = tube_bottom(tube, CONTRACT.tube.length_m)
        (depth, radial), frame = min(((socket_offsets(bottom, f), f) for f in FRAMES), key=lambda x: x[0][1])
        check = seat_check(tube, FRAMES, CONTRACT)
        if check.slot is None:
            assert radial > CONTRACT.rotor.mouth_radius_m
            continue
        judged += 1
        assert (check.slot, check.radial_m, check.depth_fraction) == (frame.index, radial,
                                                                     depth / CONTRACT.rotor.socket_depth_m)
    assert judged > 300
