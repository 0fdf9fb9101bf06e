"""Per-success metrics: all attempts in the denominator, unknown stays unknown."""
import pytest

from labference_ros.policies.agent.accounting import PriceTable, per_success


def test_cost_and_time_per_success_count_failed_attempts():
    eps = [{"verdict": "PASS", "cost_usd": 0.02, "turn_elapsed_s": 30.0, "model_calls": 3},
           {"verdict": "FAIL", "cost_usd": 0.04, "turn_elapsed_s": 90.0, "model_calls": 6},
           {"verdict": "ERROR", "cost_usd": 0.0, "turn_elapsed_s": 10.0, "model_calls": 1}]
    m = per_success(eps)
    assert m["successes"] == 1 and m["attempts"] == 3
    assert m["cost_per_success_usd"] == pytest.approx(0.06)
    assert m["time_per_success_s"] == pytest.approx(130.0) and m["model_calls"] == 10


def test_unknown_usage_and_zero_successes_stay_undefined():
    eps = [{"verdict": "PASS", "cost_usd": None, "turn_elapsed_s": 30.0},
           {"verdict": "PASS", "cost_usd": 0.01, "turn_elapsed_s": 20.0}]
    m = per_success(eps)
    assert m["cost_per_success_usd"] is None and m["unknown_cost_attempts"] == 1
    assert m["time_per_success_s"] == pytest.approx(25.0)
    none = per_success([{"verdict": "FAIL", "cost_usd": 0.01, "turn_elapsed_s": 5.0}])
    assert none["cost_per_success_usd"] is None and none["time_per_success_s"] is None


def test_price_table():
    t = PriceTable.from_params({"input_per_mtok": 2.0, "output_per_mtok": 8.0})
    assert t.cost(1_000_000, 500_000) == pytest.approx(6.0)
    assert t.cost(None, 10) is None and PriceTable().cost(10, 10) is None
    with pytest.raises(ValueError):
        PriceTable.from_params({"input_per_mtok": "cheap"})
