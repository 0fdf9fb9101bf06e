"""The run summary: every attempt in the denominators, zero denominators unavailable."""
from __future__ import annotations

import pytest

from labference_ros.core.summary import UNAVAILABLE, format_rate, format_table, summarize


def attempt(eid, system="pi05", condition="basic", status="ok", wall=2.0, sim=20.0, **scores):
    return {"episode_id": eid, "instance_id": eid, "system": system, "condition": condition, "status": status,
            "reason": "deadline", "error": None if status == "ok" else "service timeout",
            "wall_s": wall, "sim_s": sim, "scores": scores or None}


def test_rates_count_errors_in_the_denominator():
    s = summarize([
        attempt("a", first_choice_correct=True, valid_complete=True, physically_complete=True),
        attempt("b", first_choice_correct=False, valid_complete=False, physically_complete=True),
        attempt("c", status="error", wall=None, sim=None),
        attempt("d", first_choice_correct=None, valid_complete=None),
    ])
    o = s["overall"]
    assert o["episodes"] == 4 and o["errors"] == 1
    assert {k: o["selection"][k] for k in ("count", "n", "rate")} == {"count": 1, "n": 4, "rate": 0.25}
    assert o["selection"]["ci95"]["method"] == "wilson"
    assert o["selection"]["ci95"]["lo"] == pytest.approx(0.0456, abs=1e-3)
    assert {k: o["completion"][k] for k in ("count", "n", "rate")} == {"count": 1, "n": 4, "rate": 0.25}
    assert o["physical_completion"]["count"] == 2
    assert o["runtime_wall_s"] == {"mean": 2.0, "n": 3} and o["runtime_sim_s"]["mean"] == 20.0
    assert [r["episode_id"] for r in s["per_episode"]] == ["a", "b", "c", "d"]
    assert s["per_episode"][2]["status"] == "error" and s["per_episode"][2]["selection_correct"] is None


def test_groups_by_system_and_condition():
    s = summarize([attempt("a", first_choice_correct=True), attempt("b", condition="extended"),
                   attempt("c", system="gr00t", first_choice_correct=True)])
    groups = {(g["system"], g["condition"]): g for g in s["per_group"]}
    assert set(groups) == {("pi05", "basic"), ("pi05", "extended"), ("gr00t", "basic")}
    assert groups[("pi05", "basic")]["selection"]["rate"] == 1.0
    assert groups[("pi05", "extended")]["selection"]["rate"] == 0.0
    assert {k: s["overall"]["selection"][k] for k in ("count", "n", "rate")} == {"count": 2, "n": 3, "rate": 2 / 3}


def test_zero_denominators_are_unavailable_never_zero_percent():
    s = summarize([])
    assert s["overall"]["selection"]["rate"] is None and s["overall"]["runtime_wall_s"]["mean"] is None
    table = format_table(s)
    assert UNAVAILABLE in table and "0.0 %" not in table
    assert format_rate({"count": 0, "n": 0, "rate": None}) == UNAVAILABLE
    assert format_rate({"count": 0, "n": 2, "rate": 0.0}) == "0/2 (0.0 %)"


def test_table_has_a_line_per_group_and_overall():
    table = format_table(summarize([attempt("a", first_choice_correct=True, valid_complete=True),
                                    attempt("b", condition="extended", status="error", wall=None, sim=None)]))
    lines = table.splitlines()
    assert lines[0].split()[:5] == ["system", "condition", "episodes", "selection", "completion"]
    assert any(line.startswith("pi05") and "basic" in line and "1/1 (100.0 %) [20.7, 100.0]" in line for line in lines)
    ext = next(line for line in lines if "extended" in line)
    assert "0/1 (0.0 %)" in ext and UNAVAILABLE in ext and ext.rstrip().endswith("1 (other 1)")
    assert lines[-1].startswith("all") and "1/2 (50.0 %)" in lines[-1]
