"""`labference diagnose`: the first point where each episode's attempt broke down.

Classes, checked in this order (the first that applies wins):
validity_error     no final scores.json (launcher/referee fault, stop reason)
complete           valid task completion (clean or recovered)
violation          irreversible protocol/safety violation
no_choice          no identified choice at the first native decision (or none reached)
wrong_choice       first native choice outside its legal set
execution_failure  the chosen operation's physical subgoal was not confirmed
dwell_never_reached  executed, but the terminal predicate never held its dwell
"""
from __future__ import annotations

from collections import Counter

from labference_ros.core.populations import is_scored, native_decisions

from .episodes import load
from .identity import CELL, group_checked

CLASSES = ("validity_error", "complete", "violation", "no_choice", "wrong_choice",
           "execution_failure", "dwell_never_reached")


def attribute(ep: dict) -> str:
    if not is_scored(ep):
        return "validity_error"
    s = ep["scores"]
    if s.get("valid_complete") is True:
        return "complete"
    if s.get("violations"):
        return "violation"
    dec = native_decisions(s)
    if not dec or dec[0].get("first_choice") is None:
        return "no_choice"
    if dec[0].get("choice_correct") is not True:
        return "wrong_choice"
    if s.get("executed") is not True:
        return "execution_failure"
    return "dwell_never_reached"


def detail(ep: dict) -> str:
    s = ep.get("scores") or {}
    if not is_scored(ep):
        return ep.get("error") or f"status={s.get('status', 'missing')}"
    return f"class={s.get('completion_class')} violations={s.get('violations')}"


def attribution_counts(attempts) -> dict:
    """Attempts per class, every class listed (0 when none)."""
    counts = Counter(attribute(e) for e in attempts)
    return {c: counts.get(c, 0) for c in CLASSES}


def diagnose(roots) -> dict:
    cells = group_checked(load(roots))
    out = []
    for key, eps in cells.items():
        rows = [{"episode_id": e["episode_id"], "instance_id": e.get("instance_id"),
                 "attribution": attribute(e), "detail": detail(e)} for e in eps]
        out.append({"cell": dict(zip(CELL, key)), "counts": attribution_counts(eps), "episodes": rows})
    return {"classes": list(CLASSES), "cells": out}


def format_diagnosis(d: dict) -> str:
    lines = []
    for c in d["cells"]:
        name = " / ".join(f"{k}={v}" for k, v in c["cell"].items() if v not in (None, ""))
        lines.append(f"== {name}  ({len(c['episodes'])} attempts)")
        lines += [f"  {k:<20} {v}" for k, v in c["counts"].items()]
        for r in c["episodes"]:
            if r["attribution"] != "complete":
                lines.append(f"    {r['episode_id']}: {r['attribution']} ({r['detail']})")
    return "\n".join(lines)
