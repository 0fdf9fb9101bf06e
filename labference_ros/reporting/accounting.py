"""Attempt accounting (control-benchmark protocol, "Accounting and statistical rule").

Every attempt stays in the denominator: PASS, FAIL and ERROR alike, including
attempts a resumed campaign later redid. Time and cost per success divide the
totals over *all* attempts by the successes. Unknown usage is unknown: one
attempt without a known cost makes the cost total unknown (None), never 0.
Zero successes leave per-success figures undefined (None).

Usage is the episode's run.json `usage` record (written for systems that call
a model, e.g. the agent: `cost_usd`, `model_calls`, `overload_rejections`,
per-call `calls`; docs/records.md). Per cell the overload rejections are
published with a sensitivity estimate of cost per success that charges each
rejection REJECTION_SENSITIVITY_USD (protocol: a rejected request is billed
nothing by the provider's policy, which is an assumption, not a measurement).
"""
from __future__ import annotations

from labference_ros.core.metrics import rate
from labference_ros.core.populations import is_scored
from labference_ros.core.records import known_sum

PASS, FAIL, ERROR = "PASS", "FAIL", "ERROR"
REJECTION_SENSITIVITY_USD = 0.01  # per overload rejection (control protocol)


def outcome(ep: dict) -> str:
    """PASS: valid task completion in a final scores.json. FAIL: a final scores.json
    without it (an ordinary policy failure is a measured outcome). ERROR: anything
    else (no scores.json, a stop reason instead of "final", a launcher error)."""
    if not is_scored(ep):
        return ERROR
    return PASS if ep["scores"].get("valid_complete") is True else FAIL


def _first_known(*values):
    for v in values:
        if v is not None:
            return v
    return None


def wall_s(ep: dict) -> float | None:
    """Task wall time of the attempt (accelerated simulation, model waiting included)."""
    s, r = ep.get("scores") or {}, ep.get("run") or {}
    return _first_known(ep.get("wall_s"), s.get("wall_s"), (s.get("timing") or {}).get("wall_s"),
                        r.get("wall_s"), (r.get("timing") or {}).get("wall_s"))


def usage(ep: dict) -> dict | None:
    s, r = ep.get("scores") or {}, ep.get("run") or {}
    return _first_known(ep.get("usage"), s.get("usage"), r.get("usage"))


def _usage_value(ep: dict, key: str):
    u = usage(ep)
    return None if not isinstance(u, dict) else u.get(key)


def cost(ep: dict) -> float | None:
    return _usage_value(ep, "cost_usd")


def overload_rejections(ep: dict) -> int | None:
    return _usage_value(ep, "overload_rejections")


def accounting(attempts) -> dict:
    attempts = list(attempts)
    outcomes = [outcome(a) for a in attempts]
    n = len(attempts)
    passes = outcomes.count(PASS)
    times = [wall_s(a) for a in attempts]
    costs = [cost(a) for a in attempts]
    calls = [_usage_value(a, "model_calls") for a in attempts]
    rejections = [overload_rejections(a) for a in attempts]
    time_total, cost_total, rejection_total = known_sum(times), known_sum(costs), known_sum(rejections)
    sensitivity_total = (None if cost_total is None or rejection_total is None
                         else cost_total + REJECTION_SENSITIVITY_USD * rejection_total)
    return {
        "attempts": n, "PASS": passes, "FAIL": outcomes.count(FAIL), "ERROR": outcomes.count(ERROR),
        "success_rate": rate(passes, n),
        "time_total_s": time_total, "time_unknown": sum(t is None for t in times),
        "cost_total_usd": cost_total, "cost_unknown": sum(c is None for c in costs),
        "model_calls": known_sum(calls),
        "overload_rejections": rejection_total, "rejections_unknown": sum(r is None for r in rejections),
        "time_per_success_s": None if time_total is None else rate(time_total, passes),
        "cost_per_success_usd": None if cost_total is None else rate(cost_total, passes),
        "rejection_sensitivity_usd": REJECTION_SENSITIVITY_USD,
        "cost_per_success_usd_rejection_sensitivity": (None if sensitivity_total is None
                                                       else rate(sensitivity_total, passes)),
    }
