"""Run summary over every attempted episode (paper Table 3 columns). Pure.

Input: one attempt row per episode as the episode runner records it:
episode_id, instance_id, system, condition, status ("ok" | "error"),
reason, error, wall_s, sim_s and scores (the referee's scores.json dict, or
None when the referee never answered). Every attempt stays in the
denominators, errors included (control protocol: PASS, FAIL and ERROR all
count); a rate whose denominator is zero is None, printed "unavailable".

Correct-weight selection: the first scored choice was correct
(scores.first_choice_correct). Completion: valid completion
(scores.valid_complete: terminal predicate held for its dwell, no
irreversible violation). Each rate carries its 95 % Wilson interval (episodes
taken as independent; `labference report` also accounts for pairs and
families), so 3/3 reads [43.9 %, 100 %], never a zero-width interval.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from labference_ros.core.failures import error_kind
from labference_ros.core.proportions import WILSON, wilson

SUMMARY_SCHEMA = 1
UNAVAILABLE = "unavailable"


def _rate(count: int, n: int) -> dict:
    lo, hi = wilson(count, n)
    return {"count": count, "n": n, "rate": count / n if n else None, "ci95": {"method": WILSON, "lo": lo, "hi": hi}}


def _mean(values: list[float]) -> dict:
    return {"mean": sum(values) / len(values) if values else None, "n": len(values)}


def episode_row(attempt: dict) -> dict:
    scores = attempt.get("scores") or {}
    return {
        "episode_id": attempt["episode_id"],
        "instance_id": attempt.get("instance_id"),
        "system": attempt.get("system"),
        "condition": attempt.get("condition"),
        "status": attempt.get("status", "error"),
        "reason": attempt.get("reason"),
        "error": attempt.get("error"),
        # Older attempt rows carry no kind: it is named from the message.
        "error_kind": attempt.get("error_kind") or (error_kind(attempt.get("error"))
                                                    if attempt.get("status", "error") != "ok" else None),
        "wall_s": attempt.get("wall_s"),
        "setup_wall_s": attempt.get("setup_wall_s"),
        "sim_s": attempt.get("sim_s"),
        "selection_correct": scores.get("first_choice_correct"),
        "complete": scores.get("valid_complete"),
        "physically_complete": scores.get("physically_complete"),
        "completion_class": scores.get("completion_class"),
        "system_events": attempt.get("system_events") or [],
    }


def aggregate(rows: list[dict]) -> dict:
    n = len(rows)
    return {
        "episodes": n,
        "errors": sum(1 for r in rows if r["status"] != "ok"),
        "error_kinds": dict(sorted(Counter(r["error_kind"] or "other" for r in rows if r["status"] != "ok").items())),
        "selection": _rate(sum(1 for r in rows if r["selection_correct"] is True), n),
        "completion": _rate(sum(1 for r in rows if r["complete"] is True), n),
        "physical_completion": _rate(sum(1 for r in rows if r["physically_complete"] is True), n),
        "runtime_wall_s": _mean([r["wall_s"] for r in rows if r["wall_s"] is not None]),
        "runtime_sim_s": _mean([r["sim_s"] for r in rows if r["sim_s"] is not None]),
    }


def summarize(attempts: Iterable[dict], run: dict | None = None) -> dict:
    rows = [episode_row(a) for a in attempts]
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["system"], row["condition"]), []).append(row)
    return {
        "schema": SUMMARY_SCHEMA,
        "run": run or {},
        "per_episode": rows,
        "per_group": [{"system": s, "condition": c, **aggregate(g)} for (s, c), g in sorted(groups.items(), key=str)],
        "overall": aggregate(rows),
    }


def format_rate(rate: dict) -> str:
    if not rate["n"]:
        return UNAVAILABLE
    return f"{rate['count']}/{rate['n']} ({100.0 * rate['rate']:.1f} %)"


def format_rate_ci(rate: dict) -> str:
    """`3/3 (100.0 %) [43.9, 100.0]`: the count, the rate and its 95 % Wilson interval in %."""
    text = format_rate(rate)
    ci = rate.get("ci95") or {}
    if not rate["n"] or ci.get("lo") is None:
        return text
    return f"{text} [{100.0 * ci['lo']:.1f}, {100.0 * ci['hi']:.1f}]"


def format_errors(g: dict) -> str:
    """`0`, or the count with its kinds: `3 (policy_timeout 2, policy_unreachable 1)`."""
    kinds = g.get("error_kinds") or {}
    if not g["errors"] or not kinds:
        return str(g["errors"])
    return f"{g['errors']} ({', '.join(f'{k} {n}' for k, n in kinds.items())})"


def format_seconds(mean: dict) -> str:
    return UNAVAILABLE if mean["mean"] is None else f"{mean['mean']:.2f}"


COLUMNS = ("system", "condition", "episodes", "selection", "completion", "wall s", "sim s", "errors")


def format_table(summary: dict) -> str:
    """One line per system and condition, then the overall line; rates with their 95 % Wilson interval."""
    def cells(label_s, label_c, g):
        return [label_s, label_c, str(g["episodes"]), format_rate_ci(g["selection"]), format_rate_ci(g["completion"]),
                format_seconds(g["runtime_wall_s"]), format_seconds(g["runtime_sim_s"]), format_errors(g)]

    body = [cells(str(g["system"]), str(g["condition"]), g) for g in summary["per_group"]]
    body.append(cells("all", "", summary["overall"]))
    table = [list(COLUMNS)] + body
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
