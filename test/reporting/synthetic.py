"""Synthetic run.json / scores.json dicts in the docs/records.md shape (no simulator)."""
from __future__ import annotations

import json
from pathlib import Path

STANDARD = {"10": "std_10", "20": "std_20", "50": "std_50", "100": "std_100"}


def op(obj, kind="add", dest="pan"):
    return {"type": kind, "object": obj, "destination": dest}


def run_json(eid, iid, system="scripted", condition="basic", pair_id="", pair_role="", stratum="180:std_50",
             contract_hash="h-basic", observation="full", mode="none", site=None, **extra):
    run = {"records_schema": 1, "episode_id": eid,
           "task": {"contract": {"task": "feedback_weighing", "condition": condition, "version": "1.0.0"},
                    "contract_id": f"feedback_weighing.{condition}@1.0.0", "contract_hash": contract_hash},
           "instance": {"instance_id": iid, "condition": condition, "pair_id": pair_id,
                        "pair_role": pair_role, "stratum": stratum},
           "policy": {"name": system, "action_spec_hash": "spec-1"},
           "observation": {"condition": observation, "history_protocol": "none"},
           "intervention": {"mode": mode, **({"site": site} if site else {})},
           "assets": {"revision": "assets-1"}, "versions": {"evaluation": "0.1.0"}}
    run.update(extra)
    return run


def decision(required, chosen, ready=True, execution=None, oid=1):
    """One native opportunity record; chosen None = no identified choice."""
    legal = [op(r) for r in required]
    correct = None if chosen is None else op(chosen) in legal
    return {"opportunity_id": oid, "native_scorable": True, "status": "closed",
            "reference_state": {"reading_ready": ready}, "legal_set": legal,
            "first_choice": None if chosen is None else op(chosen), "choice_correct": correct,
            "execution": execution}


def scores_json(eid, decisions=(), executed=None, physical=False, valid=None, clean=None, recovered=None,
                violations=(), status="final", explicit=None, **extra):
    valid = physical and not violations if valid is None else valid
    clean = valid if clean is None else clean
    recovered = False if recovered is None else recovered
    decisions = list(decisions)
    first = decisions[0]["choice_correct"] if decisions else None
    ident = sum(d["first_choice"] is not None for d in decisions)
    corr = sum(d["choice_correct"] is True for d in decisions)
    n = len(decisions)
    s = {"records_schema": 1, "status": status, "episode_id": eid,
         "native": {"population": n, "identified": ident, "correct": corr},
         "explicit": explicit or {"population": 0, "identified": 0, "correct": 0},
         "first_choice_correct": first, "executed": executed,
         "physically_complete": physical, "valid_complete": valid, "clean_complete": clean and valid,
         "recovered_complete": recovered, "violations": list(violations),
         "completion_class": ("none" if not physical else "invalid" if not valid
                              else "clean" if clean else "recovered"),
         "opportunity_records": decisions}
    s.update(extra)
    return s


def episode(eid, required=("std_50",), chosen="std_50", executed=None, physical=None, status="final",
            run_kw=None, **score_kw):
    """A whole episode; by default a clean success when the choice is right."""
    right = chosen is not None and chosen in required
    executed = (right if chosen is not None else None) if executed is None else executed
    physical = bool(right and executed) if physical is None else physical
    dec = [decision(required, chosen, execution="confirmed" if executed else None)]
    return {"episode_id": eid, "run": run_json(eid, (run_kw or {}).pop("iid", eid), **(run_kw or {})),
            "scores": scores_json(eid, dec, executed=executed, physical=physical, status=status, **score_kw)}


def write_output_dir(root: Path, episodes, registered=None, summary=None) -> Path:
    root = Path(root)
    for e in episodes:
        d = root / "episodes" / e["episode_id"]
        d.mkdir(parents=True, exist_ok=True)
        if e.get("run") is not None:
            (d / "run.json").write_text(json.dumps(e["run"]))
        if e.get("scores") is not None:
            (d / "scores.json").write_text(json.dumps(e["scores"]))
    if registered is not None:
        (root / "instances.json").write_text(json.dumps({"schema": 1, "instances": registered}))
    if summary is not None:
        (root / "summary.json").write_text(json.dumps(summary))
    return root
