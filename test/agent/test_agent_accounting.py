"""The agent's usage record (run.json `usage`) and the report's accounting over it:
all attempts in the denominator, unknown stays unknown, rejections published
with the $0.01/rejection sensitivity estimate."""
import pytest

from labference_ros.policies.agent.accounting import ActionRecord, CallRecord, EpisodeAccount, PriceTable
from labference_ros.reporting.accounting import accounting

PRICES = PriceTable.from_params({"input_per_mtok": 2.0, "output_per_mtok": 8.0})


def model_call(rnd, tokens=(1000, 100), rejections=0, model_s=None, elapsed_s=2.0, retry_wait_s=0.0):
    tin, tout = tokens
    communication_s = None if model_s is None else elapsed_s - model_s - retry_wait_s
    return CallRecord(rnd, tin, tout, elapsed_s - retry_wait_s, elapsed_s, model_s, communication_s,
                      rejections, retry_wait_s, 500, PRICES.cost(tin, tout), "plan")


def usage(*calls, actions=()):
    return EpisodeAccount(list(calls), list(actions)).usage(turn_elapsed_s=30.0)


def attempt(verdict, wall_s, run_usage):
    """An attempt as reporting/episodes.py loads it: run.json carries `usage`."""
    scores = None if verdict == "ERROR" else {"status": "final", "valid_complete": verdict == "PASS"}
    return {"episode_id": f"e{id(run_usage)}", "wall_s": wall_s, "usage": None,
            "run": {"usage": run_usage} if run_usage is not None else None, "scores": scores}


def test_usage_record_keeps_each_call_and_splits_its_time():
    pick = ActionRecord(1, "pick", {"object": "std_50"}, ok=True, moved=True, physical=True, sim_s=4.0, wall_s=1.5)
    u = usage(model_call(1, model_s=1.25, elapsed_s=5.0, retry_wait_s=3.0, rejections=1),
              model_call(2, tokens=(None, None)), actions=[pick])
    first, second = u["calls"]
    assert (first["tokens_in"], first["tokens_out"]) == (1000, 100)
    assert first["model_computation_s"] == 1.25 and first["communication_s"] == 0.75
    assert first["retry_wait_s"] == 3.0 and first["overload_rejections"] == 1
    assert first["actions"] == 1 and first["physical_execution_wall_s"] == 1.5
    assert first["physical_execution_sim_s"] == 4.0
    # A call without reported usage is null, never zero, and so is everything it feeds.
    assert second["tokens_in"] is None and second["cost_usd"] is None and second["actions"] == 0
    assert u["tokens_in"] is None and u["cost_usd"] is None and u["model_computation_s"] is None
    assert u["model_calls"] == 2 and u["actions"] == 1 and u["overload_rejections"] == 1
    assert u["model_wait_s"] == 7.0 and u["turn_elapsed_s"] == 30.0


def test_cost_and_time_per_success_count_every_attempt_and_rejections():
    known = usage(model_call(1), model_call(2, rejections=1))  # 2 x 0.0028 USD
    rows = [attempt("PASS", 30.0, known),
            attempt("FAIL", 90.0, usage(model_call(1, rejections=1))),
            attempt("ERROR", 10.0, usage())]  # ended before any model call: cost 0, known
    a = accounting(rows)
    assert (a["attempts"], a["PASS"], a["FAIL"], a["ERROR"]) == (3, 1, 1, 1)
    assert a["cost_total_usd"] == pytest.approx(3 * 0.0028)
    assert a["cost_per_success_usd"] == pytest.approx(3 * 0.0028)
    assert a["time_per_success_s"] == pytest.approx(130.0)
    assert a["model_calls"] == 3 and a["overload_rejections"] == 2 and a["rejections_unknown"] == 0
    assert a["cost_per_success_usd_rejection_sensitivity"] == pytest.approx(3 * 0.0028 + 0.02)


def test_unknown_usage_keeps_cost_unknown_but_not_time():
    rows = [attempt("PASS", 20.0, usage(model_call(1))),
            attempt("PASS", 30.0, usage(model_call(1, tokens=(None, 40))))]
    a = accounting(rows)
    assert a["cost_total_usd"] is None and a["cost_unknown"] == 1
    assert a["cost_per_success_usd"] is None and a["cost_per_success_usd_rejection_sensitivity"] is None
    assert a["time_per_success_s"] == pytest.approx(25.0)
    assert a["overload_rejections"] == 0  # the counts themselves are known
    # An attempt with no run.json usage at all (a crash, a system that calls no model).
    b = accounting(rows[:1] + [attempt("ERROR", 5.0, None)])
    assert b["cost_per_success_usd"] is None and b["overload_rejections"] is None
    assert b["rejections_unknown"] == 1 and b["time_per_success_s"] == pytest.approx(25.0)


def test_zero_successes_leave_per_success_undefined():
    a = accounting([attempt("FAIL", 5.0, usage(model_call(1, rejections=1))), attempt("ERROR", 3.0, usage())])
    assert a["PASS"] == 0 and a["cost_total_usd"] == pytest.approx(0.0028)
    assert a["overload_rejections"] == 1
    assert a["time_per_success_s"] is None and a["cost_per_success_usd"] is None
    assert a["cost_per_success_usd_rejection_sensitivity"] is None


def test_price_table():
    t = PriceTable.from_params({"input_per_mtok": 2.0, "output_per_mtok": 8.0})
    assert t.cost(1_000_000, 500_000) == pytest.approx(6.0)
    assert t.cost(None, 10) is None and PriceTable().cost(10, 10) is None
    with pytest.raises(ValueError):
        PriceTable.from_params({"input_per_mtok": "cheap"})
