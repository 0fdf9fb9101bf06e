"""Fixed checkpoint populations J and K (paper 7.1-7.2) and matched gains with
cluster-bootstrap intervals (6.4, 7.4), on hand-built records (no simulator)."""
from types import SimpleNamespace

import pytest

from labference_ros.core import populations as on_policy
from labference_ros.reporting import checkpoint_populations as cp
from synthetic import decision, op, run_json, scores_json


def rec(cid, condition="base", cluster=None, status="ok", verified=True, delivered=True, scorable=True,
        choice=None, legal=("std_50",), supplied=False, confirmed=None, completed=False):
    return {"checkpoint_id": cid, "cluster": cluster or cid, "condition": condition, "status": status,
            "verified": verified, "evidence_delivered": delivered, "native_scorable": scorable,
            "first_choice": None if choice is None else op(choice),
            "legal_set": [op(o) for o in legal], "subgoal_supplied": supplied,
            "subgoal_confirmed": confirmed, "completed": completed}


def base_population():
    """J = c1..c4 (B_next 2/4, C_id 3/4); K = c1, c2, c4, x1 (E_fixed 3/4).
    x1..x4 would each change J's values if they were counted in it."""
    return [
        rec("c1", cluster="A", choice="std_50", supplied=True, confirmed=True),
        rec("c2", cluster="A", choice="std_20", supplied=True, confirmed=False),
        rec("c3", cluster="B", choice=None),
        rec("c4", cluster="C", choice="std_10", legal=("std_10", "std_20"), supplied=True, confirmed=True),
        # Outside J: evidence never delivered, no legal physical operation, preparation failed,
        # and one whose evidence delivery was not recorded.
        rec("x1", delivered=False, choice="std_50", supplied=True, confirmed=True),
        rec("x2", scorable=False, choice="std_50", legal=("wait",)),
        rec("x3", status="unresolved", verified=False, choice="std_50", supplied=True, confirmed=False,
            completed=None),
        rec("x4", delivered=None, choice="std_50"),
    ]


def supported_population(condition="assist:state"):
    """The support turns c2's wrong choice and c3's missing choice into legal ones."""
    return [
        rec("c1", condition, cluster="A", choice="std_50", supplied=True, confirmed=True, completed=True),
        rec("c2", condition, cluster="A", choice="std_50", supplied=True, confirmed=True, completed=True),
        rec("c3", condition, cluster="B", choice="std_50", completed=True),
        rec("c4", condition, cluster="C", choice="std_20", legal=("std_10", "std_20"), supplied=True,
            confirmed=True),
        rec("x1", condition, delivered=False, choice="std_50", supplied=True, confirmed=True),
        rec("x2", condition, scorable=False, choice="std_50", legal=("wait",)),
        rec("x3", condition, status="unresolved", verified=False, completed=None),
        rec("x4", condition, delivered=None, choice="std_50"),
    ]


def test_b_next_c_id_accuracy_over_j_and_e_fixed_over_k():
    m = cp.population_metrics(base_population())
    assert m["J"] == ["c1", "c2", "c3", "c4"]
    assert m["K"] == ["c1", "c2", "c4", "x1"]
    base = m["conditions"]["base"]
    assert base["B_next"]["rate"] == 0.5 and base["B_next"]["N"] == 4
    assert base["C_id"]["rate"] == 0.75
    assert base["accuracy_identified"] == pytest.approx(2 / 3)
    assert base["E_fixed"]["rate"] == 0.75 and base["E_fixed"]["N"] == 4
    # The checkpoints outside J are kept, with their reasons, in the validity report.
    v = m["validity"]
    assert v["registered"] == 8 and v["verified"] == 7
    assert v["preparation_failed"] == ["x3"]
    assert v["not_evidence_delivered"] == ["x1"] and v["not_native_scorable"] == ["x2"]
    assert v["membership_unknown"] == ["x4"]
    assert v["full_population"] is False
    assert v["verification_rate"] == pytest.approx(7 / 8)


def test_membership_is_fixed_by_the_base_branch_for_every_condition():
    records = base_population() + supported_population()
    # A supported branch that claims a different membership does not move the checkpoint.
    records[-1] = {**records[-1], "evidence_delivered": True}
    m = cp.population_metrics(records)
    assert m["J"] == ["c1", "c2", "c3", "c4"]
    sup = m["conditions"]["assist:state"]
    assert sup["J"] == 4 and sup["B_next"]["rate"] == 1.0 and sup["C_id"]["rate"] == 1.0
    assert sup["E_fixed"]["rate"] == 1.0


def test_zero_denominators_are_unavailable():
    m = cp.population_metrics([rec("x1", delivered=False)])
    base = m["conditions"]["base"]
    assert m["J"] == [] and base["B_next"]["rate"] is None and base["C_id"]["rate"] is None
    assert base["accuracy_identified"] is None and base["E_fixed"]["rate"] is None
    unidentified = cp.population_metrics([rec("c1", choice=None)])["conditions"]["base"]
    assert unidentified["C_id"]["rate"] == 0.0 and unidentified["accuracy_identified"] is None


def test_gain_of_a_support_with_its_cluster_bootstrap_interval():
    m = cp.population_metrics(base_population() + supported_population())
    g = m["gains"]["assist:state"]["metrics"]["choice_correct"]
    assert g["population"] == "J" and g["N"] == 4 and g["unresolved"] == 0
    assert g["gain"] == pytest.approx(0.5)  # (4 - 2) / 4
    ci = g["interval"]
    assert ci["n_clusters"] == 3 and ci["seed"] == 240926 and ci["draws"] == 2000
    assert ci["lo"] <= g["gain"] <= ci["hi"] and ci["lo"] < ci["hi"]
    again = cp.population_metrics(base_population() + supported_population())
    assert again["gains"]["assist:state"]["metrics"]["choice_correct"]["interval"] == ci
    assert m["gains"]["assist:state"]["metrics"]["subgoal_confirmed"]["gain"] == pytest.approx(0.25)


def test_an_error_metric_gain_is_positive_when_the_support_removes_errors():
    m = cp.population_metrics(base_population() + supported_population())
    wrong = m["gains"]["assist:state"]["metrics"]["wrong_choice"]
    assert wrong["higher_is_better"] is False
    assert wrong["base"]["count"] == 1 and wrong["supported"]["count"] == 0
    assert wrong["gain"] == pytest.approx(0.25)  # one error fewer in four: +, not -
    assert wrong["interval"]["lo"] >= 0.0


def test_resampling_keeps_the_pairs_of_a_cluster_together():
    """In each family the support fixes one checkpoint and breaks the other: every
    family's mean change is 0, so whole-family draws all give 0, while drawing single
    pairs (each its own cluster) spreads the interval."""
    records = []
    for family in "PQRS":
        fixed, broken = f"{family}1", f"{family}2"
        records += [rec(fixed, cluster=family, choice="std_20"), rec(broken, cluster=family, choice="std_50"),
                    rec(fixed, "replace:decision", cluster=family, choice="std_50"),
                    rec(broken, "replace:decision", cluster=family, choice="std_20")]
    by_family = cp.population_metrics(records)["gains"]["replace:decision"]["metrics"]["choice_correct"]
    assert by_family["gain"] == 0.0
    assert by_family["interval"]["n_clusters"] == 4
    assert by_family["interval"]["lo"] == 0.0 and by_family["interval"]["hi"] == 0.0
    per_pair = [{**r, "cluster": r["checkpoint_id"]} for r in records]
    split = cp.population_metrics(per_pair)["gains"]["replace:decision"]["metrics"]["choice_correct"]
    assert split["interval"]["n_clusters"] == 8
    assert split["interval"]["lo"] < 0.0 < split["interval"]["hi"]


def test_unresolved_pairs_give_bounds_not_a_gain():
    records = base_population() + supported_population()
    c3 = next(i for i, r in enumerate(records) if r["checkpoint_id"] == "c3" and r["condition"] != "base")
    records[c3] = rec("c3", "assist:state", cluster="B", status="unresolved", choice=None, completed=None)
    m = cp.population_metrics(records)
    g = m["gains"]["assist:state"]["metrics"]["choice_correct"]
    assert g["unresolved"] == 1 and g["gain"] is None and g["interval"] is None
    assert g["supported"]["bounds"] == [0.75, 1.0]  # s = 3 legal, u = 1 of N = 4
    assert g["supported"]["rate"] is None
    sup = m["conditions"]["assist:state"]
    assert sup["B_next"]["rate"] is None and sup["B_next"]["bounds"] == [0.75, 1.0]
    assert sup["accuracy_identified"] is None
    # Completion is over every registered start: the failed preparation x3 stays unresolved.
    done = m["gains"]["assist:state"]["metrics"]["completed"]
    assert done["N"] == 8 and done["gain"] is None
    assert done["supported"]["bounds"] == [0.25, 0.5]  # c1, c2 done; c3, x3 unresolved


def test_an_incompatible_support_gets_its_status_and_no_gain():
    records = base_population() + [{**r, "condition": "replace:skill", "status": "incompatible:action_only"}
                                   for r in supported_population()]
    m = cp.population_metrics(records)
    assert m["gains"]["replace:skill"] == {"compatibility": "incompatible:action_only"}
    assert m["conditions"]["replace:skill"] == {"compatibility": "incompatible:action_only"}


def _rollout(eid, decisions):
    return {"episode_id": eid, "run": run_json(eid, eid), "scores": scores_json(eid, decisions)}


def test_on_policy_decisions_give_another_value_than_the_fixed_population():
    """Acceptance (issue 16): the policy is right on an empty pan and wrong once a standard
    is on it. Its own rollouts mostly fail the first transfer and so never reach the hard
    state; the on-policy average rewards that, J does not."""
    easy, hard = ("std_50",), ("std_20",)
    rollouts = [_rollout(f"e{i}", [decision(easy, "std_50", oid=1)]) for i in range(4)]
    rollouts.append(_rollout("e4", [decision(easy, "std_50", oid=1), decision(hard, "std_10", oid=2)]))
    averaged = on_policy.choice(rollouts)["all_decisions"]
    assert averaged["population"] == 6 and averaged["correct"] == 5
    assert averaged["B_next"] == pytest.approx(5 / 6)  # 6 decisions reached, 5 legal
    fixed = [rec("easy1", choice="std_50", legal=easy), rec("easy2", choice="std_50", legal=easy),
             rec("hard1", choice="std_10", legal=hard), rec("hard2", choice="std_10", legal=hard)]
    j_value = cp.population_metrics(fixed)["conditions"]["base"]["B_next"]["rate"]
    assert j_value == 0.5  # hand count: 2 legal of the 4 registered checkpoints
    assert j_value != averaged["B_next"]


def test_records_from_oracle_objects_keep_unknown_fields_unknown():
    checkpoint = SimpleNamespace(verified=True, spec=SimpleNamespace(
        checkpoint_id="i1:p0", instance=SimpleNamespace(instance_id="i1", pair_id="pair-3")))
    branch = SimpleNamespace(checkpoint_id="i1:p0", condition="replace:skill", status="ok",
                             choice=op("std_50"), choice_correct=True, completed=False,
                             executor_attempts=[{"status": "refused"},
                                                {"status": "attempted", "outcome": "failed"}])
    r = cp.record_from_branch(branch, checkpoint)
    assert r["cluster"] == "pair-3" and r["verified"] is True
    assert r["evidence_delivered"] is None and r["native_scorable"] is None and r["legal_set"] is None
    assert r["subgoal_supplied"] is None and r["subgoal_confirmed"] is False
    assert cp.is_correct(r) is True  # from the kept verdict, the legal set being absent
    base = cp.record_from_branch(SimpleNamespace(**{**vars(branch), "condition": "base",
                                                    "executor_attempts": []}), checkpoint)
    assert base["subgoal_confirmed"] is None
    m = cp.population_metrics([base, r])
    assert m["J"] == [] and m["K"] == [] and m["validity"]["membership_unknown"] == ["i1:p0"]
    known = cp.record_from_branch(branch, checkpoint, evidence_delivered=True, native_scorable=True,
                                  legal_set=[op("std_20")])
    assert cp.is_correct(known) is False  # a recorded legal set wins over the verdict
    faulted = cp.record_from_branch(SimpleNamespace(**{**vars(branch), "status": "unresolved"}), checkpoint)
    assert faulted["choice_correct"] is None and faulted["completed"] is None


def test_a_fixed_subgoal_start_counts_in_k_only_and_never_in_j():
    # f1, f2: starts registered for the fixed-subgoal population. Their choice was the
    # supplied one (correct by construction), so counting them in J would raise B_next.
    fixed = [
        {**rec("f1", choice="std_50", supplied=True, confirmed=False), "fixed_subgoal": True},
        {**rec("f2", choice="std_50", supplied=False), "fixed_subgoal": True},  # the supply failed
        {**rec("f1", "replace:skill", choice="std_50", supplied=True, confirmed=True), "fixed_subgoal": True},
        {**rec("f2", "replace:skill", choice="std_50", supplied=False), "fixed_subgoal": True},
    ]
    m = cp.population_metrics([r for r in base_population() if r["checkpoint_id"] in ("c1", "c2")]
                              + [rec(c, "replace:skill", choice="std_50", supplied=True, confirmed=True)
                                 for c in ("c1", "c2")] + fixed, draws=200)
    assert m["J"] == ["c1", "c2"] and m["K"] == ["c1", "c2", "f1"]
    assert m["validity"]["fixed_subgoal"] == ["f1", "f2"] and m["validity"]["subgoal_not_supplied"] == ["f2"]
    assert m["conditions"]["base"]["B_next"]["rate"] == 0.5  # f1, f2 left out
    assert m["conditions"]["base"]["E_fixed"]["count"] == 1 and m["conditions"]["base"]["E_fixed"]["N"] == 3
    assert m["gains"]["replace:skill"]["metrics"]["subgoal_confirmed"]["gain"] == pytest.approx(2 / 3)


def test_rates_over_j_and_gains_get_intervals_that_do_not_collapse():
    """Every pair agrees: the bootstrap gives [0, 0] for the gain, the paired interval does not;
    B_next over J gets a Wilson interval on its clusters."""
    recs = [rec(f"c{k}", cond, cluster=f"pair{k // 2}", choice="std_50")
            for k in range(4) for cond in ("base", "assist:state")]
    out = cp.population_metrics(recs)
    b_next = out["conditions"]["base"]["B_next"]
    assert b_next["rate"] == 1.0 and b_next["interval"]["n_clusters"] == 2
    assert b_next["interval"]["method"] == "wilson_design_effect" and b_next["interval"]["lo"] < 0.5
    g = out["gains"]["assist:state"]["metrics"]["choice_correct"]
    assert g["gain"] == 0 and g["interval"]["lo"] == g["interval"]["hi"] == 0.0
    assert g["paired_interval"]["lo"] < 0 < g["paired_interval"]["hi"] and g["paired_interval"]["p_value"] == 1.0
