"""Centrifuge task state and legal set (paper 4.1): the second destination
follows the first tube's actual slot; an unfinished placement keeps the
pending operation on that tube; completion needs the opposite pair for 3 s."""
from __future__ import annotations

import pytest

from labference_ros.core.operations import STOP_OP, WAIT_OP, insert, pick
from labference_ros.tasks.centrifuge import task_state as ts
from labference_ros.tasks.centrifuge.contract import contract_for

BASIC, EXTENDED = contract_for("basic"), contract_for("extended")


def test_basic_the_destination_is_opposite_the_seated_tube():
    for j in range(12):
        z = ts.initial_state(BASIC, {"tube_a": j})
        assert ts.legal_set(BASIC, z) == (insert("tube_b", f"slot_{(j + 6) % 12:02d}"),)
    with pytest.raises(ValueError):
        ts.initial_state(BASIC, {})


def test_extended_the_first_tube_settling_elsewhere_changes_the_second_destination():
    z = ts.initial_state(EXTENDED, {})
    first = ts.legal_set(EXTENDED, z)
    assert len(first) == 24 and insert("tube_a", "slot_01") in first  # any slot, either tube
    # Meant for slot 1, settled in slot 2 (paper 4.1): the next destination is slot 8, not 7.
    z = ts.note_attempt(z, "tube_a", 1)
    z = ts.confirm_seated(z, "tube_a", 2)
    assert ts.legal_set(EXTENDED, z) == (insert("tube_b", "slot_08"),)
    assert z.first_intended_slot == 1 and z.seated == {"tube_a": 2}  # the record keeps both
    assert z.to_dict()["first_intended_slot"] == "slot_01" and z.to_dict()["seated"] == {"tube_a": "slot_02"}


def test_a_failed_grasp_changes_nothing_and_an_unfinished_insertion_keeps_its_tube_pending():
    z = ts.initial_state(EXTENDED, {})
    before = ts.legal_set(EXTENDED, z)
    z = ts.note_attempt(z, "tube_b", 3)  # a grasp that failed: an attempt, no outcome
    assert ts.legal_set(EXTENDED, z) == before
    z = ts.confirm_unfinished(z, "tube_b", 3)  # released shallow in slot 3
    legal = ts.legal_set(EXTENDED, z)
    assert legal and all(op.object == "tube_b" for op in legal)  # the pending operation concerns it
    assert z.evidence_version == 1


def test_completion_needs_the_opposite_pair_for_the_terminal_window():
    z = ts.confirm_seated(ts.initial_state(BASIC, {"tube_a": 4}), "tube_b", 10)
    assert ts.legal_set(BASIC, z) == (WAIT_OP,)
    z = ts.terminal_update(BASIC, z, 1.0, 2.0, True)
    z = ts.terminal_update(BASIC, z, 1.5, 0.5, False)  # disturbed: the window restarts
    assert z.terminal_dwell_s == 0.0 and not z.physically_complete
    # The window counts from its first sample (2.1 s, 0 s held): 30 samples later it has
    # held 2.9 s, not yet 3 s (paper 8.1: the opposite occupancy persists 3 s).
    for k in range(30):
        z = ts.terminal_update(BASIC, z, 2.0 + 0.1 * (k + 1), 0.1, True)
    assert not z.physically_complete and z.terminal_dwell_s == pytest.approx(2.9)
    z = ts.terminal_update(BASIC, z, 5.1, 0.1, True)
    assert z.physically_complete and z.complete_t == pytest.approx(5.1)
    assert ts.legal_set(BASIC, z) == (STOP_OP,)


def test_a_second_tube_in_the_wrong_slot_calls_for_taking_it_out():
    z = ts.confirm_seated(ts.initial_state(BASIC, {"tube_a": 4}), "tube_b", 9)
    assert not ts.opposite_pair(BASIC, z)
    assert ts.legal_set(BASIC, z) == (pick("tube_b"),)
    z = ts.confirm_removed(z, "tube_b")
    assert ts.legal_set(BASIC, z) == (insert("tube_b", "slot_10"),)
