"""What the non-privileged placement-recall system sees (tasks/placement_recall/perception.py):
the rack's pose, the half turn included, the holes holding a tube and the tube standing
on the table, from one 320 x 240 front frame and the camera's calibration, on scenes
rendered by MuJoCo."""
from __future__ import annotations

import dataclasses
import math
import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")

from labference_ros.cell.description import placement_cell  # noqa: E402
from labference_ros.perception.camera import world_camera_calibration  # noqa: E402
from labference_ros.sim.mujoco_backend import MujocoBackend, RenderSettings  # noqa: E402
from labference_ros.tasks import family  # noqa: E402
from labference_ros.tasks.placement_recall.perception import sight  # noqa: E402
from labference_ros.tasks.placement_recall.rack import RackGeometry, hole_positions  # noqa: E402

FAMILY = family("placement_recall")
HOLE_TOLERANCE_M = 0.005  # every hole's opening, as seen, this near where it is
YAW_TOLERANCE_DEG = 3.5


@pytest.fixture(scope="module")
def sightings():
    """(instance as rendered, what was seen) for six extended instances, each as generated
    and turned by half a turn, and one basic instance."""
    backend = MujocoBackend(RenderSettings(width=320, height=240), FAMILY.name)
    calib = world_camera_calibration("front", 240, 320, placement_cell())
    out = []
    try:
        scenes = FAMILY.generate("extended-same", 3, 0, 100, 0) + FAMILY.generate("extended-distinct", 3, 0, 200, 0)
        for inst in scenes:
            for turn in (0.0, math.pi):
                shown = dataclasses.replace(inst, rack_yaw_rad=inst.rack_yaw_rad + turn)
                backend.load(shown)
                out.append((shown, sight(backend.render("front"), calib), backend.measure()))
        basic = FAMILY.generate("basic-same", 1, 0, 300, 0)[0]
        backend.load(basic)
        out.append((basic, sight(backend.render("front"), calib), backend.measure()))
    finally:
        backend.close()
    return out


def test_the_rack_is_found_with_its_facing_from_the_coloured_edges(sightings):
    for inst, seen, _ in sightings:
        assert seen.pose is not None, inst.instance_id
        true, found = hole_positions(RackGeometry(), inst.rack_pose), hole_positions(RackGeometry(), seen.pose)
        worst = max(float(np.linalg.norm(true[h][:2] - found[h][:2])) for h in true)
        assert worst < HOLE_TOLERANCE_M, (inst.instance_id, worst)
        turn = math.degrees(math.remainder(seen.pose.yaw_rad - inst.rack_yaw_rad, 2 * math.pi))
        assert abs(turn) < YAW_TOLERANCE_DEG, (inst.instance_id, turn)  # a half turn is never mistaken


def test_holes_seen_holding_a_tube_hold_one(sightings):
    exact = 0
    for inst, seen, _ in sightings:
        taken = set(inst.distractors.values())
        assert set(seen.seated) <= taken, (inst.instance_id, sorted(seen.seated), sorted(taken))
        exact += set(seen.seated) == taken
    # A cap behind another tube can be hidden (then a hole holding one is not seen as
    # taken); in this list that happens in two scenes of thirteen.
    assert exact >= len(sightings) - 2, exact


def test_the_tube_on_the_table_is_found_by_its_cap(sightings):
    # Well inside what a grasp tolerates: the fingers open 50 mm around a 15 mm tube.
    for inst, seen, measured in sightings:
        target = measured.objects["tube_target"].position
        assert seen.standing, inst.instance_id
        assert math.dist(seen.standing[0][:2], target[:2]) < 0.004, (inst.instance_id, seen.standing)


def test_a_cap_showing_over_the_a1_marker_is_seen():
    """Only red blobs near the red A1 marker are taken for it: in extended-same seed 0's sixth
    instance the blue cap of the tube in A3 shows 2.4 px from the far marker, and its hole was
    taken for free (the system placed its tube there and grasped the other one)."""
    inst = FAMILY.generate("extended-same", 6, task_seed=0, layout_seed=0, policy_seed=0)[5]
    assert "A3" in inst.distractors.values()
    backend = MujocoBackend(RenderSettings(width=320, height=240), FAMILY.name)
    try:
        backend.load(inst)
        seen = sight(backend.render("front"), world_camera_calibration("front", 240, 320, placement_cell()))
    finally:
        backend.close()
    assert set(seen.seated) == set(inst.distractors.values()), sorted(seen.seated)
    assert seen.caps["A3"] == "blue"
