import itertools
from collections import Counter

from labference_ros.tasks.weighing import instances as gen
from labference_ros.tasks.weighing.objects import STANDARD_MASSES_G


def test_basic_instances_balanced_and_exactly_one_standard_completes():
    insts = gen.generate("basic", 24, task_seed=5, layout_seed=100, policy_seed=900, layout_fn=None)
    strata = Counter(i.stratum for i in insts)
    assert len(strata) == 12 and set(strata.values()) == {2}
    assert Counter(i.target_g for i in insts[:12]) == {160.0: 4, 180.0: 4, 200.0: 4}
    for i in insts:
        completing = [s for s, m in STANDARD_MASSES_G.items() if abs(i.sample_mass_g + m - i.target_g) < 1e-9]
        assert completing == list(i.goal_set) and i.initial_on_pan == ()


def test_extended_instances_follow_the_condition():
    insts = gen.generate("extended", 30, task_seed=5, layout_seed=100, policy_seed=900, layout_fn=None)
    assert len({i.stratum for i in insts}) == 30
    for i in insts:
        assert i.target_g in (200, 220, 240) and 2 <= len(i.goal_set) <= 3 and i.initial_on_pan
        assert len(set(i.initial_on_pan) ^ set(i.goal_set)) >= 2
        assert i.sample_mass_g + sum(STANDARD_MASSES_G[s] for s in i.goal_set) == i.target_g


def test_seeds_are_separate_streams():
    a = gen.generate("basic", 6, task_seed=5, layout_seed=100, policy_seed=900, layout_fn=lambda s: {"x": (s, 0.0)})
    b = gen.generate("basic", 6, task_seed=5, layout_seed=300, policy_seed=901, layout_fn=lambda s: {"x": (s, 0.0)})
    assert [(i.target_g, i.sample_mass_g) for i in a] == [(i.target_g, i.sample_mass_g) for i in b]
    assert [i.layout_hash for i in a] != [i.layout_hash for i in b]
    c = gen.generate("basic", 6, task_seed=6, layout_seed=100, policy_seed=900, layout_fn=lambda s: {"x": (s, 0.0)})
    assert [i.layout_hash for i in a] == [i.layout_hash for i in c]


def test_pairs_share_a_layout_draw_and_change_the_answer():
    for cond in ("basic", "extended"):
        pairs = gen.generate_pairs(cond, 12, task_seed=3, layout_seed=50, policy_seed=70)
        c = gen.contract_for(cond)
        for a, b in pairs:
            assert a.layout_seed == b.layout_seed and a.layout_hash == b.layout_hash and a.layout
            assert a.target_g == b.target_g and a.initial_on_pan == b.initial_on_pan
            assert a.sample_mass_g != b.sample_mass_g and a.goal_set != b.goal_set
            ua = gen.legal_at_start(c, a.target_g, a.goal_set, a.initial_on_pan)
            ub = gen.legal_at_start(c, b.target_g, b.goal_set, b.initial_on_pan)
            assert ua and ub and not ua & ub
        assert len({a.target_g for a, _ in pairs[:3]}) == 3


def test_instance_lists_round_trip(tmp_path):
    insts = gen.generate("extended", 4, 1, 2, 3)
    pairs = gen.generate_pairs("basic", 2, 1, 2, 3)
    gen.write_instance_list(tmp_path / "a.json", insts, {"note": "x"})
    gen.write_instance_list(tmp_path / "b.json", pairs)
    assert gen.read_instance_list(tmp_path / "a.json") == insts
    back = gen.read_instance_list(tmp_path / "b.json")
    assert gen.pairs_of(back) == pairs
