"""The placement-recall reference systems' decisions, on evaluator views built by hand."""
from __future__ import annotations

import numpy as np

from labference_ros.core.system import EvaluatorView
from labference_ros.tasks.placement_recall.contract import contract_for
from labference_ros.tasks.placement_recall.instances import generate
from labference_ros.tasks.placement_recall.rack import COLUMNS, ROWS, hole_positions, hole_under, parse_label
from labference_ros.tasks.placement_recall.perception import RackSighting
from labference_ros.tasks.placement_recall.systems import (
    CapColour,
    CapColourPixels,
    LabelMemory,
    WorldPosition,
    free_holes,
)


def turned_instance(caps: str):
    return next(i for i in generate("extended", caps, 8, task_seed=0, layout_seed=0, policy_seed=0)
                if i.movement == "rotate_180")


def view_after_the_turn(instance, target_hole: str) -> EvaluatorView:
    """Every tube standing in its hole of the turned rack (the target in target_hole)."""
    rack = contract_for(instance.condition).rack
    pose = instance.moved_rack_pose
    holes = {**instance.distractors, "tube_target": target_hole}
    mouths = hole_positions(rack, pose)
    positions = {tube: mouths[hole] + np.array([0.0, 0.0, 0.01]) for tube, hole in holes.items()}
    return EvaluatorView(instance=instance, t=12.0, positions=positions,
                         facts={"rack_pose": [*pose.center, pose.yaw_rad], "in_holes": holes})


def a_free_hole(instance) -> str:
    return free_holes(instance.distractors.values())[0]


def test_free_holes_leave_the_fingers_room_across_the_rows():
    assert "B2" not in free_holes(["A2"]) and "B2" not in free_holes(["C2"]) and "A2" not in free_holes(["A2"])
    assert "B2" in free_holes(["B1", "B3", "A1", "C3"])  # neighbours along the row and the diagonals are fine
    assert len(free_holes([])) == 12


def test_cap_colour_finds_the_target_in_distinct_caps_and_is_at_chance_in_same_caps():
    distinct = turned_instance("distinct")
    hole = a_free_hole(distinct)
    view = view_after_the_turn(distinct, hole)
    system = CapColour()  # one system, reset per episode as the bridge does
    for seed in range(20):
        system.reset("s", seed)
        assert np.allclose(system.retrieval_point(view), view.positions["tube_target"])

    same = turned_instance("same")
    view = view_after_the_turn(same, a_free_hole(same))
    reached = []
    for seed in range(400):
        system.reset("s", seed)
        point = system.retrieval_point(view)
        reached.append(next(t for t, p in view.positions.items() if np.allclose(p, point)))
    share = reached.count("tube_target") / len(reached)
    assert set(reached) == {"tube_target", *same.distractors}  # any of the four alike tubes
    assert 0.17 <= share <= 0.33, share  # one in four


def test_label_memory_finds_its_label_in_the_turned_rack_and_world_position_its_old_place():
    instance = turned_instance("same")
    hole = a_free_hole(instance)
    view = view_after_the_turn(instance, hole)
    memory = LabelMemory()
    memory.remembered_hole = hole
    assert np.allclose(memory.retrieval_point(view), view.positions["tube_target"])

    rack = contract_for(instance.condition).rack
    before = hole_positions(rack, instance.rack_pose)[hole]
    world = WorldPosition()
    world.released_at = before + np.array([0.0, 0.0, 0.01])
    point = world.retrieval_point(view)
    # Over the hole the turned rack now has where the tube was let go: the half turn's mirror image.
    row, col = parse_label(hole)
    mirrored = f"{ROWS[len(ROWS) - 1 - row]}{COLUMNS - col}"
    assert hole_under(point, rack, instance.moved_rack_pose) == mirrored != hole

    memory.reset("s", 1)
    assert memory.retrieval_point(view) is None
    distinct = turned_instance("distinct")
    gone = view_after_the_turn(distinct, a_free_hole(distinct))
    gone.facts["in_holes"].pop("tube_target")  # no tube with the target's cap stands in the rack
    assert CapColour().retrieval_point(gone) is None  # it never saw its tube in the rack: it gives up


def test_cap_colour_pixels_reaches_for_the_seen_cap_of_its_tubes_colour():
    # What it sees after the half turn, as perception.sight reports it: four seated caps.
    pose = turned_instance("distinct").moved_rack_pose
    distinct = RackSighting(pose, seated={h: (0.0, 0.0, 0.0) for h in ("A2", "B4", "C1", "C3")},
                            caps={"A2": "yellow", "B4": "red", "C1": "blue", "C3": "green"})
    system = CapColourPixels()
    for seed in range(20):
        system.reset("s", seed)
        system.tube_colour = "red"  # the cap it saw on the tube it picked from the table
        assert system.retrieval_hole(distinct, 12.0) == "B4"

    same = RackSighting(pose, seated=distinct.seated, caps={h: "blue" for h in distinct.seated})
    chosen = []
    for seed in range(400):
        system.reset("s", seed)
        system.tube_colour = "blue"
        chosen.append(system.retrieval_hole(same, 12.0))
    assert set(chosen) == set(same.seated)  # any of the four alike caps
    assert 0.17 <= chosen.count("B4") / len(chosen) <= 0.33  # one in four

    system.reset("s", 1)
    system.tube_colour = "red"
    assert system.retrieval_hole(same, 12.0) is None  # no red cap in the rack: it gives up
