"""The placement-recall generator: separate seeds, balanced and independent factors."""
from collections import Counter

import pytest

from labference_ros.tasks.placement_recall.instances import (CAP_COLOURS, DISTRACTORS, TARGET, PlacementInstance,
                                                             generate, read_instance_list, write_instance_list)
from labference_ros.tasks.placement_recall.rack import LABELS


def test_basic_is_an_empty_rack_with_a_still_occlusion():
    for inst in generate("basic", "distinct", 8, task_seed=2, layout_seed=10, policy_seed=0):
        assert inst.distractors == {} and inst.movement == "none" and inst.tubes == (TARGET,)
        assert inst.moved_rack_pose == inst.rack_pose


def test_extended_crosses_movement_with_target_colour_in_every_block():
    items = generate("extended", "distinct", 16, task_seed=5, layout_seed=0, policy_seed=0)
    for block in (items[:8], items[8:]):
        pairs = Counter((i.movement, i.cap_colours[TARGET]) for i in block)
        # Every (movement, colour) once: each colour is as often turned as not.
        assert len(pairs) == 8 and set(pairs.values()) == {1}
    for inst in items:
        assert sorted(inst.cap_colours) == sorted((TARGET, *DISTRACTORS))
        assert sorted(inst.cap_colours.values()) == sorted(CAP_COLOURS)  # one colour each


def test_distractor_holes_partition_the_rack_every_four_instances():
    items = generate("extended", "same", 12, task_seed=1, layout_seed=0, policy_seed=0)
    for k in range(0, 12, 4):
        holes = [label for inst in items[k:k + 4] for label in inst.distractors.values()]
        assert sorted(holes) == sorted(LABELS)
    assert all(set(inst.cap_colours.values()) == {"blue"} for inst in items)


def test_the_seeds_stay_separate():
    a = generate("extended", "distinct", 8, task_seed=3, layout_seed=40, policy_seed=0)
    b = generate("extended", "distinct", 8, task_seed=3, layout_seed=41, policy_seed=9)
    c = generate("extended", "distinct", 8, task_seed=4, layout_seed=40, policy_seed=0)
    answers = [[(i.movement, i.cap_colours, i.distractors) for i in items] for items in (a, b, c)]
    assert answers[0] == answers[1] and answers[0] != answers[2]  # only the task seed moves the answers
    layouts = [[i.layout_hash for i in items] for items in (a, b, c)]
    assert layouts[0] == layouts[2] and layouts[0] != layouts[1]  # only the layout seed moves the layout
    assert generate("extended", "distinct", 8, 3, 40, 0) == a
    d = generate("extended", "distinct", 8, task_seed=3, layout_seed=40, policy_seed=5)
    assert [i.policy_seed for i in d] != [i.policy_seed for i in a]  # only the policy seed moved
    assert [(i.movement, i.cap_colours, i.distractors, i.layout_hash) for i in d] == \
        [(i.movement, i.cap_colours, i.distractors, i.layout_hash) for i in a]


def test_instance_lists_round_trip_and_bad_conditions_are_named(tmp_path):
    items = generate("extended", "distinct", 3, task_seed=0, layout_seed=0, policy_seed=0)
    write_instance_list(tmp_path / "list.json", items)
    assert read_instance_list(tmp_path / "list.json") == items
    assert PlacementInstance.from_json(items[0].to_json()) == items[0]
    with pytest.raises(ValueError, match="unknown placement-recall condition 'hard'"):
        generate("hard", "same", 1, 0, 0, 0)
    with pytest.raises(ValueError, match="unknown cap condition 'striped'"):
        generate("basic", "striped", 1, 0, 0, 0)
