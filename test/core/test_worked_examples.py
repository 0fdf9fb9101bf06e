"""Paper 4.2 worked examples, driven through the Referee on synthetic streams."""
import itertools

import pytest

from labference_ros.tasks.weighing.contract import weighing_extended
from labference_ros.core.operations import STOP_OP, WAIT_OP, Operation, add, remove
from labference_ros.tasks.weighing.task_state import Goal, initial_state, legal_set, operation_for_grasp, update, PhysicalEvidence, ConfirmedEvent
from referee_streams import episode, instance, ops


@pytest.mark.parametrize("sample,answer", [(130.0, "std_50"), (160.0, "std_20")])
def test_basic_180_target_stable_reading_makes_one_addition_legal(sample, answer):
    ref, w = episode(instance(180, sample, (answer,)))
    w.run(0.3)
    opp = ref.opportunities[0]
    assert ref.state()["reading_ready"] and abs(ref.state()["last_stable_reading_g"] - sample) < 0.05
    assert ops(opp.legal_set) == [f"add({answer}->pan)"]
    # Every other standard is rejected as a choice.
    w.move("std_10" if answer != "std_10" else "std_100", "pan")
    choice = w.events("choice")[0]
    assert choice["detail"]["scored"] and choice["detail"]["correct"] is False


def test_basic_pair_same_layout_different_answers_disjoint():
    a, b = instance(180, 130, ("std_50",)), instance(180, 160, ("std_20",))
    ra, wa = episode(a)
    rb, wb = episode(b)
    wa.run(0.3)
    wb.run(0.3)
    assert not set(ra.legal_set()) & set(rb.legal_set())


def _apply(contract, goal, z, obj, where, t):
    ev = PhysicalEvidence(t, (ConfirmedEvent("support", t, obj, where, None, 1, True),))
    return update(contract, goal, z, ev, 0.0)[0]


def test_extended_example_accepts_every_correct_order_and_rejects_others():
    c = weighing_extended()
    goal = Goal(220.0, frozenset({"std_100", "std_20"}))
    needed = [remove("std_50"), add("std_100"), add("std_20")]
    every_op = {add(s) for s in ("std_10", "std_20", "std_50", "std_100")} | \
               {remove(s) for s in ("std_10", "std_20", "std_50", "std_100", "sample")} | {WAIT_OP, STOP_OP}
    for order in itertools.permutations(needed):
        z = initial_state(goal, ("std_50",))
        from dataclasses import replace
        z = replace(z, reading_ready=True)
        for t, op in enumerate(order):
            u = set(legal_set(c, goal, z))
            assert op in u, (order, op, u)
            for wrong in every_op - u:
                assert wrong not in u
            # Anything outside the remaining corrections is rejected.
            remaining = {o for o in needed if o not in order[:t]}
            assert u == remaining
            z = _apply(c, goal, z, op.object, op.destination, float(t))
        assert legal_set(c, goal, z) == (WAIT_OP,)
        assert z.supported_standards == goal.goal_set


@pytest.mark.parametrize("order", list(itertools.permutations(["std_50", "std_100", "std_20"])))
def test_extended_example_streams_complete_cleanly_in_any_order(order):
    inst = instance(220, 100, ("std_20", "std_100"), start=("std_50",), condition="extended")
    ref, w = episode(inst)
    w.run(0.3)
    for obj in order:
        w.move(obj, "table" if obj == "std_50" else "pan")
    w.run(3.5)
    s = ref.scores()
    assert s["physically_complete"] and s["completion_class"] == "clean", s
    assert s["native"]["population"] == 3 and s["native"]["B_next"] == 1.0
    assert ops(ref) == ["stop"]


def test_extended_wrong_first_choice_is_rejected_then_recovered():
    inst = instance(220, 100, ("std_20", "std_100"), start=("std_50",), condition="extended")
    ref, w = episode(inst)
    w.run(0.3)
    w.move("std_10", "pan")  # not a correction
    assert w.events("choice")[0]["detail"]["correct"] is False
    assert ops(ref) == ["add(std_100->pan)", "add(std_20->pan)", "remove(std_10->table)", "remove(std_50->table)"]
    for obj, where in (("std_10", "table"), ("std_50", "table"), ("std_100", "pan"), ("std_20", "pan")):
        w.move(obj, where)
    w.run(3.5)
    s = ref.scores()
    assert s["completion_class"] == "recovered" and s["recovered_complete"] and not s["clean_complete"]
    assert w.events("recovery")


def test_grasp_identifies_operation_from_state_before_contact():
    goal = Goal(220.0, frozenset({"std_100", "std_20"}))
    z = initial_state(goal, ("std_50",))
    assert operation_for_grasp(z, "std_50") == remove("std_50")
    assert operation_for_grasp(z, "std_20") == add("std_20")
    assert operation_for_grasp(z, "sample") == Operation("remove", "sample", "table")
