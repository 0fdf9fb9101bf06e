"""Section 7 populations: each rate over its own population; zero denominators are None."""
from labference_ros.core import populations as pop
from labference_ros.core.records import run_info
from labference_ros.reporting.report import TaskFamilyMissing, evaluation_steps
from labference_ros.tasks import family
from labference_ros.tasks.weighing.contract import weighing_basic
from synthetic import decision, episode, run_json, scores_json

WEIGHING_STEPS = family("feedback_weighing").evaluation_chain(weighing_basic().evaluation_steps)


def test_empty_population_is_unavailable_not_zero():
    m = pop.all_metrics([])
    assert m["choice"]["all_decisions"]["B_next"] is None
    assert m["choice"]["all_decisions"]["C_id"] is None
    assert m["reach"][0]["reach"] is None and m["reach"][0]["correct_per_run"] is None
    assert m["execution"]["E_fixed"] is None and m["execution"]["K"] == 0
    assert m["completion"]["valid"]["rate"] is None
    assert m["pairs"]["P_state"] is None
    assert m["steps"]["SR"] is None and m["steps"]["SSR"] is None


def test_choice_rates_share_one_population_and_accuracy_uses_coverage():
    eps = [episode("e1", chosen="std_50"), episode("e2", chosen="std_100"), episode("e3", chosen=None),
           episode("e4", chosen="std_50")]
    c = pop.choice(eps)["all_decisions"]
    assert c["population"] == 4 and c["identified"] == 3 and c["correct"] == 2
    assert c["B_next"] == 0.5 and c["C_id"] == 0.75
    assert abs(c["accuracy_identified"] - 2 / 3) < 1e-12


def test_unscored_episodes_stay_out_of_choice_and_completion_but_lower_coverage():
    eps = [episode("e1"), episode("e2", status="referee_shutdown"), {"episode_id": "e3", "run": None, "scores": None}]
    assert pop.choice(eps)["all_decisions"]["population"] == 1
    comp = pop.completion(eps, registered=4)
    assert comp["n"] == 1 and comp["valid"]["rate"] == 1.0
    assert comp["coverage"] == 0.25
    assert comp["valid_bounds"] == {"lower": 0.25, "upper": 1.0, "unresolved": 3}


def test_reach_separates_not_reaching_from_choosing_wrong():
    reached_right = episode("a", chosen="std_50")
    reached_wrong = episode("b", chosen="std_20")
    never = {"episode_id": "c", "run": run_json("c", "c"), "scores": scores_json("c", [])}
    r = pop.reach([reached_right, reached_wrong, never], 1)
    assert (r["N_run"], r["N_reach"], r["N_correct"]) == (3, 2, 1)
    assert r["reach"] == 2 / 3 and r["correct_given_reach"] == 0.5 and r["correct_per_run"] == 1 / 3
    assert pop.reach([never], 2)["correct_given_reach"] is None  # nobody reached decision 2


def test_completion_classes_are_separate_counts():
    clean = episode("a")
    recovered = episode("b", recovered=True, clean=False)
    invalid = episode("c", violations=["sample_displaced"])
    comp = pop.completion([clean, recovered, invalid])
    assert comp["physically"]["count"] == 3 and comp["valid"]["count"] == 2
    assert comp["clean"]["count"] == 1 and comp["recovered"]["count"] == 1


def test_e_fixed_only_over_the_fixed_subgoal_population():
    own = episode("a", chosen="std_50")
    fixed_ok = episode("b", run_kw={"mode": "replace", "site": "skill"})
    fixed_fail = episode("c", executed=False, run_kw={"mode": "replace", "site": "skill"})
    ex = pop.execution([own, fixed_ok, fixed_fail])
    assert ex["K"] == 2 and ex["E_fixed"] == 0.5
    assert pop.execution([own])["E_fixed"] is None
    # A joint full-rollout condition fixes the subgoal when one of its supports replaces the decision;
    # state replacement alone leaves the choice to the system.
    joint = episode("d", run_kw={"mode": "replace", "site": "decision+geometry",
                                 "intervention": {"mode": "replace", "site": "decision+geometry",
                                                  "condition": "replace:decision+replace:geometry"}})
    state_only = episode("e", run_kw={"intervention": {"mode": "replace", "site": "state",
                                                       "condition": "replace:state"}})
    assert pop.execution([own, joint, state_only])["K"] == 1


def test_p_state_needs_both_members_and_keeps_unresolved_pairs_as_bounds():
    def member(pid, role, right):
        return episode(f"{pid}-{role}", chosen="std_50" if right else "std_10",
                       run_kw={"iid": f"{pid}-{role}", "pair_id": pid, "pair_role": role})
    eps = [member("p1", "a", True), member("p1", "b", True),
           member("p2", "a", True), member("p2", "b", False)]
    p = pop.pairs(eps)
    assert p["N"] == 2 and p["P_state"] == 0.5
    # p3 registered but its b member never produced a result: only bounds.
    p = pop.pairs(eps + [member("p3", "a", True)], registered_pairs=["p1", "p2", "p3"])
    assert p["P_state"] is None and p["lower"] == 1 / 3 and p["upper"] == 2 / 3


def test_sr_ssr_count_a_step_only_after_its_prerequisites():
    full = episode("a")
    wrong_but_completed = episode("b", chosen="std_20", executed=True, physical=True)  # recovered path
    chosen_not_moved = episode("c", executed=False)
    not_ready = {"episode_id": "d", "run": run_json("d", "d"),
                 "scores": scores_json("d", [decision(["std_50"], "std_50", ready=False)], executed=True,
                                       physical=True)}
    z = {e["episode_id"]: pop.step_chain(e["scores"], WEIGHING_STEPS)
         for e in (full, wrong_but_completed, chosen_not_moved, not_ready)}
    assert z["a"] == [True, True, True, True]
    assert z["b"] == [True, False, False, False]  # later steps do not count out of order
    assert z["c"] == [True, True, False, False]
    assert z["d"] == [False, False, False, False]
    s = pop.steps([full, wrong_but_completed, chosen_not_moved, not_ready], WEIGHING_STEPS)
    assert s["SR"] == 0.25 and abs(s["SSR"] - (4 + 1 + 2 + 0) / 16) < 1e-12


def test_the_step_chain_comes_from_the_task_contract():
    from labference_ros.tasks.weighing.instance import WeighingInstance
    contract = weighing_basic()
    assert contract.evaluation_steps == ("reading_ready", "required_standard_chosen", "transferred",
                                         "terminal_dwell_complete")
    # run.json records the contract's chain beside its hash ...
    recorded = run_info(contract, WeighingInstance("i0", "basic", 1, 2, 3, 180.0, 130.0, (), ("std_50",)),
                        episode_id="e")
    assert recorded["task"]["evaluation_steps"] == list(contract.evaluation_steps)
    # ... a report reads it from there, or from the contract for runs recorded before it did ...
    older = episode("a")
    assert "evaluation_steps" not in older["run"]["task"]
    assert [n for n, _ in evaluation_steps([older])] == list(contract.evaluation_steps)
    # ... and a chain the contract declares differently is the one SR/SSR follow.
    chosen_not_moved = episode("b", executed=False)
    chosen_not_moved["run"]["task"]["evaluation_steps"] = ["reading_ready", "required_standard_chosen"]
    chain = evaluation_steps([chosen_not_moved])
    assert [n for n, _ in chain] == ["reading_ready", "required_standard_chosen"]
    assert pop.steps([chosen_not_moved], chain)["SR"] == 1.0
    assert pop.steps([chosen_not_moved], WEIGHING_STEPS)["SR"] == 0.0


def test_step_predicates_are_the_task_familys_not_cores():
    from labference_ros.tasks.weighing import evaluation

    assert not hasattr(pop, "STEP_PREDICATES")
    chain = family("feedback_weighing").evaluation_chain(("transferred", "reading_ready"))
    assert chain == (("transferred", evaluation.transferred), ("reading_ready", evaluation.reading_ready))
    # core follows whatever predicates the family gives, in the contract's order
    always = (("a", lambda s: True), ("b", lambda s: False), ("c", lambda s: True))
    assert pop.step_chain({}, always) == [True, False, False]
    import pytest
    with pytest.raises(ValueError, match="unknown evaluation steps"):
        family("feedback_weighing").evaluation_chain(("reading_ready", "no_such_step"))


def test_a_task_family_that_is_not_installed_is_a_clear_error():
    import pytest
    other = episode("a")
    other["run"]["task"]["contract_id"] = "dissolution.basic@1.0.0"  # a family no one has installed here
    with pytest.raises(TaskFamilyMissing, match="task family 'dissolution' is not installed"):
        evaluation_steps([other])


def test_confusion_exposes_a_fixed_weight_preference():
    eps = [episode(f"e{i}", required=(req,), chosen="std_100")
           for i, req in enumerate(["std_10", "std_20", "std_50", "std_100"])]
    cm = pop.confusion(eps)
    assert cm["cols"] == ["std_100"]
    assert cm["matrix"]["std_20"] == {"std_100": 1}
    assert cm["preferred"] == "std_100" and cm["preferred_share"] == 1.0 and cm["balanced_share"] == 0.25


def test_response_latency_runs_from_the_delivery_to_the_first_choice_in_sim_time():
    from labference_ros.reporting.report import _latency_line

    def timed(eid, delivered, chosen_at, chosen="std_50"):
        e = episode(eid, chosen=chosen)
        e["scores"]["opportunity_records"][0].update(delivery_time=delivered, first_choice_t=chosen_at)
        return e

    fast, slow = timed("a", 1.0, 2.0), timed("b", 1.5, 4.5)
    no_choice = timed("c", 1.0, None, chosen=None)
    older = episode("d")  # a record without the two times: unmeasured, never 0
    second = timed("e", 1.0, 1.5)
    second["scores"]["opportunity_records"].append(
        {**second["scores"]["opportunity_records"][0], "opportunity_id": 2, "delivery_time": 3.0,
         "first_choice_t": 8.0})
    lat = pop.all_metrics([fast, slow, no_choice, older, second])["latency"]
    assert lat["clock"] == "sim"
    assert lat["all_decisions"] == {"n": 4, "mean_s": 2.375, "median_s": 2.0, "max_s": 5.0}
    assert lat["first_decision"] == {"n": 3, "mean_s": 1.5, "median_s": 1.0, "max_s": 3.0}
    line = _latency_line(lat)
    assert "all median 2 s mean 2.38 s (n=4)" in line and "first decision median 1 s" in line


def test_the_referees_opportunity_record_carries_both_ends_of_the_latency():
    import sys
    import pathlib
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "core"))
    from referee_streams import episode as stream

    ref, w = stream()
    w.run(0.3)
    w.grasp("std_50")
    w.run(0.5)
    record = ref.scores()["opportunity_records"][0]
    assert record["first_choice"] is not None
    latency = pop.response_latency_s(record)
    assert latency is not None and latency > 0
    assert abs(latency - (record["first_choice_t"] - record["delivery_time"])) < 1e-9


def test_wall_latency_runs_from_the_receipt_stamp_to_the_wall_time_the_choice_happened(tmp_path):
    import json

    from labference_ros.reporting.report import _latency_line
    from labference_ros.reporting.runtime import wall_latencies

    e = episode("a", chosen="std_50")
    e["scores"]["opportunity_records"][0].update(delivery_time=1.0, first_choice_t=1.5,
                                                 delivered_observation_id="a:obs00002")
    # Out at sim 1.0 (wall 100.0); the answer after 0.5 s of inference; the next
    # observation at sim 2.0 one wall second later. The choice at sim 1.5 falls
    # halfway through that second: wall 101.0, one second after the delivery.
    lines = [{"record": "receipt", "observation_id": "a:obs00001", "sim_time": 0.0, "wall_time": 99.0},
             {"record": "chunk", "observation_id": "a:obs00001", "t": 0.0, "wall_time": 99.2},
             {"record": "receipt", "observation_id": "a:obs00002", "sim_time": 1.0, "wall_time": 100.0},
             {"record": "chunk", "observation_id": "a:obs00002", "t": 1.0, "wall_time": 100.5},
             {"record": "receipt", "observation_id": "a:obs00003", "sim_time": 2.0, "wall_time": 101.5}]
    (tmp_path / "policy_actions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    e["path"] = str(tmp_path)
    unstamped = episode("b", chosen="std_50")  # records written before the stamps: not recorded, never 0
    unstamped["scores"]["opportunity_records"][0].update(delivery_time=1.0, first_choice_t=2.0)
    lat = pop.all_metrics([e, unstamped], wall_latencies=wall_latencies)["latency"]
    assert lat["all_decisions"]["n"] == 2  # sim time for both
    assert lat["wall"]["all_decisions"]["n"] == 1
    assert abs(lat["wall"]["first_decision"]["mean_s"] - 1.0) < 1e-9
    assert "wall time: all median 1 s" in _latency_line(lat)
    assert "(wall time not recorded)" in _latency_line(pop.all_metrics([unstamped])["latency"])
