"""The sensor-only world estimator on scripted sensor streams: what a real cell
measures (marker poses, fingertips, gripper, balance) becomes the referee's
measurements, and what it cannot decide is marked, never guessed."""
from __future__ import annotations

import math

import pytest

from labference_ros.core.measurements import BalanceMeasurement
from labference_ros.tasks import family
from labference_ros.tasks.weighing.layout import BALANCE, pan_slot
from labference_ros.tasks.weighing.recognisers import S_AMBIGUOUS, S_PAN, S_TABLE, support_classes, view_of
from labference_ros.tasks.weighing.sensor_estimator import ESTIMATOR, SensorFrame, SensorWorldEstimator

UPRIGHT = (1.0, 0.0, 0.0, 0.0)
DT = 0.05


def _tilted(deg: float):
    half = math.radians(deg) / 2
    return (math.cos(half), math.sin(half), 0.0, 0.0)


class Cell:
    """A scripted cell: marker poses, fingertips, gripper and a balance that settles."""

    def __init__(self, condition: str = "basic"):
        weighing = family("feedback_weighing")
        self.instance = weighing.generate(condition, 1, task_seed=11, layout_seed=11, policy_seed=0)[0]
        self.estimator = SensorWorldEstimator.for_instance(self.instance)
        self.poses = {n: (p, UPRIGHT) for n, p in self.estimator.initial_positions.items()}
        self.balance_xy = tuple(self.instance.layout["balance"])
        self.t = 0.0
        self.reading = 100.0
        self.hidden: set[str] = set()
        self.fingertip = (0.3, 0.0, 0.4)
        self.width, self.closing = 0.08, False
        self.referee = weighing.make_referee(weighing.contract_for(condition), self.instance, episode_id="ep",
                                             session_id="ep")
        self.records: list[dict] = []
        self.out = []

    def on_pan_pose(self, name: str):
        x, y = pan_slot(name, self.balance_xy)
        shape = self.estimator.cell.objects[name]
        return (x, y, BALANCE.pan_top_z + shape.height / 2)

    def run(self, seconds: float, stable: bool = True, overload: bool = False):
        for _ in range(int(round(seconds / DT))):
            self.t = round(self.t + DT, 9)
            markers = {n: p for n, p in self.poses.items() if n not in self.hidden}
            reading = BalanceMeasurement(raw_g=self.reading, filtered_g=self.reading, displayed_g=self.reading,
                                         stable=stable and not overload, overload=overload)
            m = self.estimator.estimate(SensorFrame(self.t, markers, self.fingertip, self.width, self.closing,
                                                    reading))
            self.out.append(m)
            self.records += self.referee.step(m)
        return self.out[-1]

    def events(self, category: str):
        return [r for r in self.records if r.get("record") == "event" and r.get("category") == category]


def test_objects_at_rest_are_supported_where_their_markers_say():
    cell = Cell()
    m = cell.run(0.5)
    support = support_classes(m)
    assert support["sample"] == S_PAN
    assert all(support[s] == S_TABLE for s in ("std_10", "std_20", "std_50", "std_100"))
    assert m.balance.valid and not m.pan_contacts[1:]  # the sample alone on the pan


def test_a_marker_occluded_for_a_second_is_unknown_not_moved():
    cell = Cell()
    cell.run(0.5)
    before = cell.out[-1].objects["std_20"]
    cell.hidden = {"std_20"}
    during = cell.run(1.0)
    assert during.objects["std_20"].position == before.position
    assert during.objects["std_20"].contacts == before.contacts  # held as last seen, flagged below
    assert not during.balance.valid and during.balance.invalid_reason.startswith(ESTIMATOR)
    assert "std_20" in during.balance.invalid_reason and "unknown" in during.balance.invalid_reason
    # The first 0.15 s of a gap is tolerated (a dropped detection is not a lost marker).
    assert cell.out[-20].balance.valid and not cell.out[-17].balance.valid
    cell.hidden = set()
    assert cell.run(0.5).balance.valid
    validity = [e["detail"]["reason"] for e in cell.events("validity")]
    assert len(validity) == 1 and "std_20" in validity[0]
    assert not any(r.get("category") in ("grasp", "release", "placement") for r in cell.records)


def test_a_standard_on_the_pan_rim_is_never_pan_support_and_its_partial_load_is_no_contradiction():
    cell = Cell()
    cell.run(1.0)
    x, y = cell.balance_xy
    shape = cell.estimator.cell.objects["std_10"]
    tilt = math.radians(20)
    # Leaning over the pan's edge, its lowest point on the pan surface.
    centre_z = BALANCE.pan_top_z + shape.height / 2 * math.cos(tilt) + shape.radius * math.sin(tilt)
    cell.poses["std_10"] = ((x, y + BALANCE.pan_radius, centre_z), _tilted(20))
    cell.reading += 5.0  # about half its mass
    m = cell.run(1.0)
    assert support_classes(m)["std_10"] == S_AMBIGUOUS
    assert m.balance.valid


def test_a_reading_change_that_matches_no_tracked_standard_is_flagged():
    cell = Cell()
    cell.run(1.0)
    cell.poses["std_10"] = (cell.on_pan_pose("std_10"), UPRIGHT)
    cell.reading += 5.0  # the marker says on the pan, the balance says half of it
    m = cell.run(1.0)
    assert support_classes(m)["std_10"] == S_PAN
    assert not m.balance.valid and "changed by +5.0 g" in m.balance.invalid_reason
    assert "+10.0 g" in m.balance.invalid_reason
    cell.reading += 5.0  # settles at its full mass: consistent again
    assert cell.run(0.5).balance.valid


def test_the_hand_pressing_the_pan_is_robot_contact():
    cell = Cell()
    cell.run(0.5)
    x, y = cell.balance_xy
    cell.fingertip = (x + 0.02, y, BALANCE.pan_top_z + 0.004)
    cell.reading += 3.0
    m = cell.run(0.5)
    assert "robot" in m.pan_contacts and view_of(m).hand_pressure
    assert m.balance.valid  # pressure spoils eligibility (the referee's rule), not validity
    cell.fingertip = (x, y, 0.3)
    cell.reading -= 3.0
    assert not view_of(cell.run(0.5)).hand_pressure


@pytest.mark.parametrize("change_g, consistent", [(30.0, True), (20.0, False)])
def test_two_standards_moved_at_once_are_checked_together(change_g, consistent):
    cell = Cell()
    cell.run(1.0)
    for name in ("std_10", "std_20"):
        cell.poses[name] = (cell.on_pan_pose(name), UPRIGHT)
    cell.reading += change_g
    m = cell.run(1.0)
    assert support_classes(m)["std_10"] == support_classes(m)["std_20"] == S_PAN
    assert m.balance.valid is consistent


def test_an_overload_reaches_the_referee_as_a_safety_violation():
    cell = Cell()
    cell.run(0.5)
    cell.reading = 700.0
    m = cell.run(0.3, overload=True)
    assert m.balance.overload
    assert [e["detail"]["reason"] for e in cell.events("safety_violation")] == ["overload"]


def test_a_held_standard_hidden_by_the_hand_follows_the_fingertips():
    cell = Cell()
    cell.run(0.5)
    (px, py, pz), _ = cell.poses["std_50"]
    cell.fingertip, cell.width, cell.closing = (px, py, pz), 0.032, True
    grasped = cell.run(0.3)
    assert "left_finger" in grasped.objects["std_50"].contacts
    cell.hidden = {"std_50"}
    cell.poses["std_50"] = ((px, py, pz + 0.1), UPRIGHT)  # where it really is; the camera cannot tell
    cell.fingertip = (px, py, pz + 0.1)
    lifted = cell.run(0.5)
    assert lifted.objects["std_50"].position == pytest.approx((px, py, pz + 0.1))
    assert lifted.balance.valid and view_of(lifted).held == "std_50"


def test_a_hand_closing_past_a_standard_grasps_it_only_once_its_fingers_stop():
    """Closing fingers pass through every width; at std_50's diameter (32 mm, 6 mm tolerance)
    on their way they brush it, and only fingers stopped there start a hold, which then
    lasts through a slip of the fingers until the hand opens."""
    cell = Cell()
    cell.run(0.5)
    (px, py, pz), _ = cell.poses["std_50"]
    cell.fingertip, cell.closing = (px, py, pz), True
    for width in (0.037, 0.035, 0.033, 0.031, 0.029, 0.032):  # 2-3 mm per 50 ms frame: 40-60 mm/s
        cell.width = width
        passing = cell.run(DT)
        assert "left_finger" not in passing.objects["std_50"].contacts, width
    stopped = cell.run(DT)  # the same width again: the fingers stand on the weight
    assert "left_finger" in stopped.objects["std_50"].contacts
    assert view_of(stopped).held == "std_50"
    cell.width = 0.0335  # a slip of 1.5 mm in one frame (30 mm/s) while holding
    slipped = cell.run(DT)
    assert view_of(slipped).held == "std_50"
    cell.width, cell.closing = 0.08, False
    assert view_of(cell.run(DT)).held is None  # opened: released


VIEWPOINT = (1.0, 0.0, 1.15)  # the cell's overhead marker camera


def _along_ray(point, distance):
    """`point` moved `distance` metres further from VIEWPOINT along its viewing ray."""
    ray = [p - v for p, v in zip(point, VIEWPOINT)]
    norm = math.sqrt(sum(c * c for c in ray))
    return tuple(p + distance * c / norm for p, c in zip(point, ray))


def _marker_centre(name, centre):
    from labference_ros.cell.description import LABEL_LIFT_M, weighing_cell

    return (centre[0], centre[1], centre[2] + weighing_cell().objects[name].height / 2 + LABEL_LIFT_M)


def _from_marker(name, marker):
    from labference_ros.cell.description import LABEL_LIFT_M, weighing_cell

    return (marker[0], marker[1], marker[2] - weighing_cell().objects[name].height / 2 - LABEL_LIFT_M)


@pytest.mark.parametrize("depth_error", [-0.08, 0.05])
def test_a_marker_seen_at_the_wrong_distance_is_put_back_on_its_surface(depth_error):
    """One camera gets a small marker's distance wrong by centimetres, its direction right:
    the estimator slides it along the viewing ray onto the table or the pan."""
    cell = Cell("extended")
    on_pan = next(n for n in cell.instance.initial_on_pan)
    on_table = next(n for n in cell.estimator.initial_positions if n not in cell.instance.initial_on_pan
                    and n != "sample")
    markers = {}
    for name in (on_pan, on_table):
        true_centre = cell.estimator.initial_positions[name]
        seen_marker = _along_ray(_marker_centre(name, true_centre), depth_error)
        markers[name] = (_from_marker(name, seen_marker), _tilted(6.0))
    frame = SensorFrame(t=0.0, markers=markers, fingertip=cell.fingertip, gripper_width=0.08, gripper_closing=False,
                        balance=None, viewpoint=VIEWPOINT)
    world = cell.estimator.estimate(frame)
    for name in (on_pan, on_table):
        assert math.dist(world.objects[name].position, cell.estimator.initial_positions[name]) < 1e-6, name
        assert world.objects[name].orientation == UPRIGHT
    assert "pan" in world.objects[on_pan].contacts and "table" in world.objects[on_table].contacts
    without_viewpoint = Cell("extended").estimator.estimate(
        SensorFrame(t=0.0, markers=markers, fingertip=cell.fingertip, gripper_width=0.08, gripper_closing=False,
                    balance=None))
    assert math.dist(without_viewpoint.objects[on_table].position, cell.estimator.initial_positions[on_table]) > 0.04


def test_a_visible_object_far_above_any_surface_stays_where_it_was_solved():
    cell = Cell()
    name = "std_50"
    start = cell.estimator.initial_positions[name]
    lifted = (start[0], start[1], start[2] + 0.3)
    frame = SensorFrame(t=0.0, markers={name: (lifted, UPRIGHT)}, fingertip=cell.fingertip, gripper_width=0.08,
                        gripper_closing=False, balance=None, viewpoint=VIEWPOINT)
    assert cell.estimator.estimate(frame).objects[name].position == lifted


def test_a_stable_reading_just_after_a_standard_lands_is_not_yet_compared():
    """The balance reports through its filter and a serial line, behind the markers: the old
    load's stable reading right after a landing is no contradiction; a second later it is."""
    cell = Cell()
    cell.run(1.0)
    name = next(n for n in ("std_20", "std_50") if n not in cell.instance.initial_on_pan)
    cell.poses[name] = (cell.on_pan_pose(name), UPRIGHT)
    soon = cell.run(DT)  # the reading still shows the old load, stable
    assert soon.balance.valid, soon.balance.invalid_reason
    late = cell.run(1.0)
    assert not late.balance.valid and ESTIMATOR in late.balance.invalid_reason


def test_a_marker_hidden_under_the_descending_hand_is_explained_by_it():
    """On the way down to a grasp the hand hides the marker before the fingers touch: that is
    no lost marker (the reading stays valid) and the grasp is still seen."""
    cell = Cell()
    cell.run(0.5)
    (px, py, pz), _ = cell.poses["std_50"]
    cell.hidden = {"std_50"}
    cell.fingertip = (px + 0.02, py, pz + 0.08)  # above it, fingers open
    above = cell.run(1.0)
    assert above.balance.valid, above.balance.invalid_reason
    cell.fingertip, cell.width, cell.closing = (px, py, pz), 0.032, True
    assert "left_finger" in cell.run(0.3).objects["std_50"].contacts
    cell.fingertip = (px + 0.2, py, pz + 0.2)  # the hand leaves without it: the marker still unseen
    cell.width, cell.closing = 0.08, False
    assert not cell.run(1.0).balance.valid


def test_with_a_marker_camera_a_held_object_follows_the_hand_not_its_marker():
    cell = Cell()
    cell.run(0.5)
    (px, py, pz), _ = cell.poses["std_50"]
    cell.fingertip, cell.width, cell.closing = (px, py, pz), 0.032, True
    cell.run(0.3)
    frame = SensorFrame(t=cell.t + DT, markers={"std_50": ((px, py + 0.05, pz - 0.04), UPRIGHT)},
                        fingertip=(px, py, pz + 0.1), gripper_width=0.032, gripper_closing=True, balance=None,
                        viewpoint=VIEWPOINT)
    held = cell.estimator.estimate(frame).objects["std_50"]
    assert held.position == pytest.approx((px, py, pz + 0.1)) and "left_finger" in held.contacts


def test_with_a_marker_camera_a_marker_seen_between_the_fingers_is_not_used():
    """Partly covered by the descending fingers, a marker's corners give a wrong pose: the
    object stays where it was last seen clear of the hand, and the grasp is still seen."""
    cell = Cell()
    cell.run(0.5)
    (px, py, pz), _ = cell.poses["std_50"]
    covered = {"std_50": ((px + 0.03, py - 0.02, pz + 0.02), UPRIGHT)}
    estimate = cell.estimator.estimate(SensorFrame(
        t=cell.t + DT, markers=covered, fingertip=(px, py, pz + 0.05), gripper_width=0.08, gripper_closing=False,
        balance=None, viewpoint=VIEWPOINT))
    assert estimate.objects["std_50"].position == pytest.approx((px, py, pz))
    far = cell.estimator.estimate(SensorFrame(
        t=cell.t + 2 * DT, markers=covered, fingertip=(px + 0.3, py, pz + 0.3), gripper_width=0.08,
        gripper_closing=False, balance=None, viewpoint=VIEWPOINT))
    assert far.objects["std_50"].position != pytest.approx((px, py, pz))  # clear of the hand: used
