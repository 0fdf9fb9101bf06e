"""The extended-condition arithmetic of display_reader: goal subset from
reading and visible standards, legal corrections, a free table spot."""
import itertools
import math
from dataclasses import replace

import pytest

from labference_ros.tasks.weighing.contract import weighing_extended
from labference_ros.tasks.weighing.instances import generate
from labference_ros.tasks.weighing.layout import BALANCE, MIN_OBJECT_SPACING, generate_layout
from labference_ros.tasks.weighing.objects import STANDARD_MASSES_G
from labference_ros.core.operations import add, remove
from labference_ros.tasks.weighing.task_state import Goal, initial_state, legal_set
from labference_ros.tasks.weighing.systems.weighing_plan import corrections, estimate_goal, free_table_spot


def test_paper_example():
    # 100 g sample, 220 g target, 50 g on the pan: reading 150 -> goal 100 + 20.
    g = estimate_goal(220, 150.0, {"std_50"})
    assert (g.sample_g, g.goal, g.consistent) == (100.0, ("std_20", "std_100"), True)
    assert corrections(g.goal, {"std_50"}) == [("std_50", "table"), ("std_20", "pan"), ("std_100", "pan")]


def test_a_misread_arrangement_is_inconsistent():
    # Reading 230 with std_50 seen: sample 180, 40 g missing, and no subset weighs 40 g.
    g = estimate_goal(220, 230.0, {"std_50"})
    assert not g.consistent and g.error_g == pytest.approx(10.0)


@pytest.mark.parametrize("inst", generate("extended", 24, task_seed=3, layout_seed=0, policy_seed=0,
                                          layout_fn=None), ids=lambda i: i.instance_id)
def test_every_correction_is_legal_in_every_order_reached(inst):
    """Following corrections() from the true reading reaches W*, and each
    move is in U at the state it is chosen."""
    c = weighing_extended()
    goal = Goal(inst.target_g, frozenset(inst.goal_set))
    on_pan = set(inst.initial_on_pan)
    for _ in range(6):
        reading = inst.sample_mass_g + sum(STANDARD_MASSES_G[n] for n in on_pan) + 0.3  # display noise
        est = estimate_goal(inst.target_g, reading, on_pan)
        assert est.consistent and set(est.goal) == set(inst.goal_set)
        todo = corrections(est.goal, on_pan)
        if not todo:
            break
        z = replace(initial_state(goal, tuple(on_pan)), reading_ready=True)
        name, dest = todo[0]
        op = add(name) if dest == "pan" else remove(name)
        assert op in legal_set(c, goal, z)
        (on_pan.add if dest == "pan" else on_pan.discard)(name)
    assert on_pan == set(inst.goal_set)


@pytest.mark.parametrize("seed", range(6))
def test_free_table_spot_is_clear_of_standards_and_balance(seed):
    layout = generate_layout(seed)
    bx, by = layout["balance"]
    table = [layout[n] for n in ("std_10", "std_20", "std_50")]
    spot = free_table_spot((bx, by), table)
    assert spot is not None
    assert min(math.dist(spot, p) for p in table) >= MIN_OBJECT_SPACING
    assert abs(spot[1] - by) >= BALANCE.housing_half_y  # not on the balance
    assert free_table_spot((bx, by), table) == spot  # deterministic


def test_full_table_has_no_spot():
    grid = [(x / 100, y / 100) for x, y in itertools.product(range(30, 70, 5), range(-40, 41, 5))]
    assert free_table_spot((0.5, 0.2), grid) is None
