"""Centrifuge instances: balanced strata, separate seeds, controlled destination pairs."""
from __future__ import annotations

from collections import Counter

from labference_ros.tasks.centrifuge import task_state as ts
from labference_ros.tasks.centrifuge.contract import contract_for
from labference_ros.tasks.centrifuge.instances import CentrifugeInstance, generate, generate_pairs


def test_basic_strata_are_balanced_over_occupied_slot_and_rotor_angle():
    insts = generate("basic", 96, task_seed=3, layout_seed=10, policy_seed=0)
    per_stratum = Counter(i.stratum for i in insts)
    assert len(per_stratum) == 48 and set(per_stratum.values()) == {2}
    assert Counter(i.seated["tube_a"] for i in insts) == {j: 8 for j in range(12)}
    # The exact yaw lies inside its stratum's bin.
    for i in insts:
        b = int(i.stratum.rsplit(":", 1)[1])
        assert b * 3.14159265 / 2 < i.rotor_yaw_rad < (b + 1) * 3.14159265 / 2


def test_task_layout_and_policy_seeds_are_separate():
    a = generate("basic", 8, task_seed=1, layout_seed=5, policy_seed=0)
    other_layout = generate("basic", 8, task_seed=1, layout_seed=6, policy_seed=0)
    other_task = generate("basic", 8, task_seed=2, layout_seed=5, policy_seed=0)
    assert [i.seated for i in a] == [i.seated for i in other_layout]  # layout never moves the answer
    assert [i.rotor_center for i in a] != [i.rotor_center for i in other_layout]
    assert [i.seated for i in a] != [i.seated for i in other_task]
    assert a == generate("basic", 8, task_seed=1, layout_seed=5, policy_seed=0)  # deterministic
    assert CentrifugeInstance.from_json(a[0].to_json()) == a[0]


def test_extended_starts_with_both_tubes_outside():
    for i in generate("extended", 8, task_seed=1, layout_seed=1, policy_seed=0):
        assert i.seated == {} and set(i.stand) == {"tube_a", "tube_b"}
        assert ts.initial_state(contract_for("extended"), i.seated).seated == {}


def test_controlled_destination_pairs_have_disjoint_legal_sets():
    basic = contract_for("basic")
    for a, b in generate_pairs(12, task_seed=4, layout_seed=20, policy_seed=0):
        assert a.pair_id == b.pair_id and a.held == b.held == "tube_b"
        assert a.layout_hash == b.layout_hash  # one layout draw
        legal_a = set(ts.legal_set(basic, ts.initial_state(basic, a.seated)))
        legal_b = set(ts.legal_set(basic, ts.initial_state(basic, b.seated)))
        assert legal_a and legal_b and not legal_a & legal_b
