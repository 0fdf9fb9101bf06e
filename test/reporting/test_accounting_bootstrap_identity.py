"""Accounting over all attempts, cluster bootstrap, identity refusal."""
import pytest

from labference_ros.reporting import accounting as acc
from labference_ros.reporting.bootstrap import Resampler, clusters
from labference_ros.reporting.identity import CELL, IdentityMismatch, group_checked
from synthetic import episode


def _with(ep, wall=None, cost=None):
    ep["wall_s"] = wall
    ep["usage"] = None if cost is None else {"cost_usd": cost, "model_calls": 1}
    return ep


def test_error_rows_stay_in_the_denominator_and_time_uses_all_attempts():
    rows = [_with(episode("a"), 10, 0.5), _with(episode("b", chosen="std_10"), 20, 0.5),
            _with(episode("c", status="referee_shutdown"), 30, 1.0),
            _with({"episode_id": "d", "run": None, "scores": None}, 40, 0.0)]
    a = acc.accounting(rows)
    assert (a["attempts"], a["PASS"], a["FAIL"], a["ERROR"]) == (4, 1, 1, 2)
    assert a["success_rate"] == 0.25
    assert a["time_per_success_s"] == 100.0 and a["cost_per_success_usd"] == 2.0


def test_unknown_usage_is_unknown_never_zero():
    rows = [_with(episode("a"), 10, 0.5), _with(episode("b"), 10, None)]
    a = acc.accounting(rows)
    assert a["cost_unknown"] == 1
    assert a["cost_total_usd"] is None and a["cost_per_success_usd"] is None
    assert a["time_per_success_s"] == 10.0


def test_zero_successes_leave_per_success_undefined():
    a = acc.accounting([_with(episode("a", chosen="std_10"), 5, 0.1)])
    assert a["PASS"] == 0 and a["success_rate"] == 0.0
    assert a["time_per_success_s"] is None and a["cost_per_success_usd"] is None
    assert acc.accounting([])["success_rate"] is None


def _pairs(n):
    eps = []
    for k in range(n):
        for role, right in (("a", k % 2 == 0), ("b", k % 3 == 0)):
            eps.append(episode(f"p{k}-{role}", chosen="std_50" if right else "std_10",
                               run_kw={"iid": f"p{k}-{role}", "pair_id": f"p{k}", "pair_role": role,
                                       "stratum": f"s{k % 4}"}))
    return eps


def test_pairs_are_never_split_and_families_hold_their_pairs():
    eps = _pairs(8)
    by_pair = clusters(eps, "pair")
    assert len(by_pair) == 8
    assert all({e["run"]["instance"]["pair_id"] for e in c} == {c[0]["run"]["instance"]["pair_id"]}
               and len(c) == 2 for c in by_pair)
    assert len(clusters(eps, "episode")) == 16
    fams = clusters(eps, "family")
    assert len(fams) == 4 and sorted(len(c) for c in fams) == [4, 4, 4, 4]


def test_bootstrap_is_deterministic_under_the_documented_seed():
    eps = _pairs(10)

    def ratio(es):
        ok = sum(e["scores"]["first_choice_correct"] is True for e in es)
        return ok, len(es)
    a = Resampler(eps, "pair").interval(ratio)
    b = Resampler(list(reversed(eps)), "pair").interval(ratio)
    assert a == b and a["seed"] == 240926 and a["draws"] == 2000
    assert a["lo"] <= a["estimate"] <= a["hi"] and a["lo"] < a["hi"]
    c = Resampler(eps, "pair", seed=1).interval(ratio)
    assert (c["lo"], c["hi"]) != (a["lo"], a["hi"])


def test_pair_bootstrap_draws_whole_pairs():
    # Within every pair exactly one member is right: any draw of whole pairs gives 1/2.
    eps = []
    for k in range(6):
        for role, right in (("a", True), ("b", False)):
            eps.append(episode(f"q{k}-{role}", chosen="std_50" if right else "std_10",
                               run_kw={"iid": f"q{k}-{role}", "pair_id": f"q{k}", "pair_role": role}))

    def ratio(es):
        return sum(e["scores"]["first_choice_correct"] is True for e in es), len(es)
    paired = Resampler(eps, "pair").interval(ratio)
    assert paired["lo"] == paired["hi"] == 0.5
    loose = Resampler(eps, "episode").interval(ratio)
    assert loose["lo"] < 0.5 < loose["hi"]


def test_unknown_numerator_gives_no_interval():
    iv = Resampler([episode("a")], "episode").interval(lambda es: (None, 1))
    assert iv["estimate"] is None and iv["lo"] is None


def test_identity_mismatch_is_refused_naming_the_fields():
    a = episode("a")
    b = episode("b", run_kw={"contract_hash": "h-other"})
    b["run"]["policy"]["action_spec_hash"] = "spec-2"
    with pytest.raises(IdentityMismatch) as err:
        group_checked([a, b])
    assert set(err.value.fields) == {"contract_hash", "action_convention"}
    assert "contract_hash" in str(err.value) and "h-other" in str(err.value)
    c = episode("c")
    c["run"]["assets"]["revision"] = "assets-2"
    with pytest.raises(IdentityMismatch) as err:
        group_checked([a, c])
    assert set(err.value.fields) == {"asset_revision"}


def test_different_systems_are_separate_cells_not_a_mismatch():
    cells = group_checked([episode("a"), episode("b", run_kw={"system": "pi05"}), episode("c")])
    assert sorted(len(v) for v in cells.values()) == [1, 2]


def test_support_the_system_could_not_take_never_shares_the_supported_cell():
    def supported(eid, status):
        ep = episode(eid, run_kw={"system": "misreader", "mode": "replace", "site": "state"})
        ep["run"]["intervention"].update(protocol="full_rollout", compatibility={"replace:state": status})
        return ep

    cells = group_checked([supported("a", "compatible"), supported("b", "incompatible:action_only"),
                           supported("c", "compatible")])
    by_status = {dict(zip(CELL, key))["intervention_compatibility"]: [e["episode_id"] for e in eps]
                 for key, eps in cells.items()}
    assert by_status == {None: ["a", "c"], "replace:state=incompatible:action_only": ["b"]}
