"""The control protocol's relative rule on hand-built paired arms with known outcomes."""
import pytest

from labference_ros.reporting.identity import CELL
from labference_ros.reporting.relative import (CellSelectionError, compare_cells, format_comparison,
                                               parse_selector, relative_rule)
from synthetic import episode


def _arm(system, n, passing, cost=1.0, wall=10.0, family=lambda k: f"fam{k}"):
    """n task units u0..u{n-1}; units in `passing` PASS, the others FAIL (wrong first choice)."""
    out = []
    for k in range(n):
        ep = episode(f"{system}-{k}", chosen="std_50" if k in passing else "std_10",
                     run_kw={"iid": f"u{k}", "system": system, "stratum": family(k)})
        ep.update(instance_id=f"u{k}", wall_s=wall, usage={"cost_usd": cost})
        out.append(ep)
    return out


def test_cheaper_faster_and_as_successful_passes():
    r = relative_rule(_arm("cand", 10, range(10), cost=0.5, wall=10), _arm("ref", 10, range(10), cost=1.0, wall=20))
    assert r["verdict"] == "pass", r["reasons"]
    assert r["reasons"] == []
    m = r["metrics"]
    assert m["cost_per_success_ratio"]["estimate"] == pytest.approx(0.5)
    assert m["cost_per_success_ratio"]["hi"] == pytest.approx(0.5)
    assert m["time_per_success_ratio"]["hi"] == pytest.approx(0.5)
    assert m["success_difference"]["lo"] == 0.0
    assert (r["draws"], r["seed"], r["level"], r["paired_units"], r["families"]) == (2000, 240926, "family", 10, 10)


def test_a_dearer_candidate_fails_on_cost_only():
    r = relative_rule(_arm("cand", 10, range(10), cost=1.5, wall=10), _arm("ref", 10, range(10), cost=1.0, wall=20))
    assert r["verdict"] == "fail"
    assert r["criteria"] == {"cost_ratio_upper_below_1": False, "time_ratio_upper_below_1": True,
                             "success_difference_lower_above_margin": True}
    assert r["metrics"]["cost_per_success_ratio"]["lo"] == pytest.approx(1.5)
    assert any("cost-per-success" in why for why in r["reasons"])


def test_cheaper_but_less_successful_fails_on_the_success_margin():
    # 16 of 20 units succeed against 20 of 20: cost and time per success still far below the reference.
    r = relative_rule(_arm("cand", 20, range(16), cost=0.2, wall=5), _arm("ref", 20, range(20), cost=1.0, wall=20))
    assert r["verdict"] == "fail"
    assert r["criteria"] == {"cost_ratio_upper_below_1": True, "time_ratio_upper_below_1": True,
                             "success_difference_lower_above_margin": False}
    assert r["metrics"]["success_difference"]["estimate"] == pytest.approx(-0.2)
    assert r["metrics"]["success_difference"]["lo"] < -0.03
    assert any("success difference" in why for why in r["reasons"])


def test_a_draw_without_a_candidate_success_leaves_the_rule_undefined():
    # One success in ten families: about a third of the draws miss it.
    r = relative_rule(_arm("cand", 10, {3}, cost=0.1, wall=1), _arm("ref", 10, range(10), cost=1.0, wall=20))
    assert r["verdict"] == "undefined"
    assert r["criteria"] == {}
    cost = r["metrics"]["cost_per_success_ratio"]
    assert cost["estimate"] == pytest.approx(1.0)  # defined on the observed sample...
    assert cost["lo"] is None and cost["hi"] is None  # ...but not in every draw, so no interval
    assert 0 < cost["undefined_draws"]["candidate has no success"] < 2000
    assert any("candidate has no success" in why for why in r["reasons"])


def test_zero_successes_on_the_sample_are_undefined_not_zero():
    r = relative_rule(_arm("cand", 5, set()), _arm("ref", 5, range(5)))
    assert r["verdict"] == "undefined"
    assert r["metrics"]["cost_per_success_ratio"]["estimate"] is None
    assert r["metrics"]["cost_per_success_ratio"]["undefined_draws"]["candidate has no success"] == 2000


def test_unknown_cost_is_unknown_and_the_rule_undefined():
    cand = _arm("cand", 6, range(6), cost=0.5)
    cand[2]["usage"] = None
    r = relative_rule(cand, _arm("ref", 6, range(6)))
    assert r["verdict"] == "undefined"
    assert r["metrics"]["cost_per_success_ratio"]["estimate"] is None
    assert "cost unknown for 1 candidate attempt(s)" in r["metrics"]["cost_per_success_ratio"]["reason"]
    assert r["metrics"]["time_per_success_ratio"]["hi"] is not None  # time is still known


def test_paired_units_are_resampled_together():
    # Both arms succeed on exactly the same units: any draw that kept pairs together
    # has a success difference of exactly 0; an unpaired resampling would scatter it.
    # No family: the pairing rests on the task unit alone.
    same = set(range(0, 12, 2))
    r = relative_rule(_arm("cand", 12, same, cost=0.5, family=lambda k: ""),
                      _arm("ref", 12, same, cost=1.0, family=lambda k: ""))
    assert r["families"] == 12
    diff = r["metrics"]["success_difference"]
    assert diff["lo"] == diff["hi"] == 0.0


def test_task_families_are_the_resampled_blocks():
    r = relative_rule(_arm("cand", 12, range(12), family=lambda k: f"fam{k % 4}"),
                      _arm("ref", 12, range(12), family=lambda k: f"fam{k % 4}"))
    assert r["paired_units"] == 12 and r["families"] == 4


def test_every_attempt_stays_in_its_arm_and_unpaired_units_are_left_out():
    cand = _arm("cand", 4, range(4), cost=0.5, wall=10)
    retry = episode("cand-err", status="referee_shutdown", run_kw={"iid": "u0", "system": "cand"})
    retry.update(instance_id="u0", wall_s=30.0, usage={"cost_usd": 0.5})
    extra = _arm("cand-only", 1, {0})[0]
    extra.update(instance_id="solo")
    r = relative_rule(cand + [retry, extra], _arm("ref", 4, range(4), cost=1.0, wall=20))
    assert r["paired_units"] == 4 and r["unpaired_units"] == {"candidate": ["solo"], "reference": []}
    t = r["totals"]["candidate"]
    assert (t["attempts"], t["successes"], t["time"], t["cost"]) == (5, 4, 70.0, 2.5)
    assert r["metrics"]["time_per_success_ratio"]["estimate"] == pytest.approx((70 / 4) / (80 / 4))


def test_the_same_inputs_give_the_same_intervals():
    args = (_arm("cand", 15, set(range(12)), cost=0.4, wall=8), _arm("ref", 15, set(range(14)), cost=1.0, wall=20))
    assert relative_rule(*args) == relative_rule(*args)


def test_cells_are_selected_by_system_or_fields_and_ambiguity_is_refused():
    assert len(CELL) == 9  # the keys below follow identity.CELL
    cells = {("a", "basic", "full", "none", None, None, None, None, None): _arm("a", 3, range(3), cost=0.5),
             ("b", "basic", "full", "none", None, None, None, None, None): _arm("b", 3, range(3)),
             ("b", "hard", "full", "none", None, None, None, None, None): _arm("b", 3, range(3))}
    assert parse_selector("a") == {"tested_system": "a"}
    c = compare_cells(cells, "a", "tested_system=b,task_condition=basic")
    assert c["candidate"]["tested_system"] == "a" and c["reference"]["task_condition"] == "basic"
    with pytest.raises(CellSelectionError, match="2 cells"):
        compare_cells(cells, "a", "b")
    with pytest.raises(CellSelectionError, match="no cell"):
        compare_cells(cells, "zzz", "a")
    with pytest.raises(CellSelectionError, match="FIELD"):
        parse_selector("colour=red")


def test_a_full_rollout_cell_is_selected_by_its_intervention_protocol():
    cells = {("a", "basic", "full", "none", None, None, None, None, None): _arm("a", 3, range(3), cost=0.5),
             ("a", "basic", "full", "replace", "state", "full_rollout", None, None, None): _arm("a", 3, range(3))}
    with pytest.raises(CellSelectionError, match="2 cells"):
        compare_cells(cells, "a", "a")
    c = compare_cells(cells, "tested_system=a,intervention_mode=none", "intervention_protocol=full_rollout")
    assert c["candidate"]["intervention_protocol"] is None
    assert c["reference"] == {"tested_system": "a", "task_condition": "basic", "observation_condition": "full",
                              "intervention_mode": "replace", "intervention_site": "state",
                              "intervention_protocol": "full_rollout", "intervention_compatibility": None,
                              "safety": None, "binding": None}
    assert "intervention_protocol=full_rollout" in format_comparison(c)
