"""Load episode attempts from launcher output directories.

A launcher output directory holds episodes/<episode_id>/{run.json,scores.json},
instances.json and summary.json. A campaign adds attempt.json next to them,
naming instances its launcher was asked for but that left no episode
directory: each becomes an ERROR attempt, so a crashed launch still counts.

Every attempt is kept (accounting uses all of them); `resolve` picks one
result per registered episode for the population metrics and flags duplicates.
"""
from __future__ import annotations

import json
from pathlib import Path

from labference_ros.core.populations import is_scored


def _read(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def bag_evidence(episode_dir: Path) -> str | None:
    """How much of the episode its bag holds: None (not recorded), "whole", or
    "partial" (its recorder was killed and left it unclosed, it was recovered from
    such a bag, or it was closed before the episode's finish: `labference audit`
    then compares it only as far as it goes, exit 3)."""
    bag = Path(episode_dir) / "bag"
    if not bag.is_dir():
        return None
    meta = bag / "metadata.yaml"
    if not meta.exists():
        return "partial"
    try:
        import yaml

        info = yaml.load(meta.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        custom = (info.get("rosbag2_bagfile_information") or {}).get("custom_data") or {}
        finish = json.loads(custom.get("labference.finish") or "{}")
    except (OSError, ValueError, AttributeError, yaml.YAMLError):
        return "partial"
    return "whole" if finish.get("status") == "finished" else "partial"


def _summary_entries(out_dir: Path) -> dict:
    """Per-episode rows of the launcher's summary.json (core/summary.py: per_episode
    with status ok|error, error, wall_s, sim_s), keyed by episode id."""
    summary = _read(out_dir / "summary.json") or {}
    rows = summary.get("per_episode", summary.get("episodes")) if isinstance(summary, dict) else None
    if isinstance(rows, dict):
        rows = [{"episode_id": k, **v} for k, v in rows.items() if isinstance(v, dict)]
    return {r["episode_id"]: r for r in rows or [] if isinstance(r, dict) and r.get("episode_id")}


def _row_error(row: dict):
    """The runner's own verdict: an attempt it marked as an error is an ERROR whatever
    the referee wrote (e.g. an evaluation-validity fault of the tested system)."""
    if row.get("status", "ok") != "ok":
        return row.get("error") or row.get("reason") or "runner error"
    return None


def registered_instances(out_dir: Path) -> list[dict]:
    """The instance list the launcher was given (write_instance_list format or a bare list)."""
    # instances.json from the launcher; a campaign attempt also keeps the chunk it passed.
    data = _read(Path(out_dir) / "instances.json") or _read(Path(out_dir) / "instances.locked.json") or {}
    items = data.get("instances", []) if isinstance(data, dict) else data
    return [i for i in items if isinstance(i, dict) and i.get("instance_id")]


def population_certification(out_dir: Path) -> dict | None:
    """The certification summary of the population a run's instances were fixed from
    (written by `labference certify`, carried by the lock and the launcher's plan)."""
    for name in ("instances.json", "instances.locked.json"):
        data = _read(Path(out_dir) / name)
        if isinstance(data, dict):
            found = (data.get("certification") or {}).get("summary") \
                or (data.get("meta") or {}).get("population_certification")
            if found:
                return found
    return None


def output_dirs(root: Path) -> list[Path]:
    root = Path(root)
    found = {p.parent for p in root.rglob("episodes") if p.is_dir()}
    found |= {p.parent for p in root.rglob("attempt.json")}
    return sorted(found)


def load_output_dir(out_dir: Path) -> list[dict]:
    out_dir = Path(out_dir)
    extras = _summary_entries(out_dir)
    attempt = _read(out_dir / "attempt.json") or {}
    hint = attempt.get("identity_hint") or {}
    eps = []
    ep_root = out_dir / "episodes"
    for d in sorted(p for p in ep_root.iterdir() if p.is_dir()) if ep_root.is_dir() else []:
        run, scores = _read(d / "run.json"), _read(d / "scores.json")
        eid = (run or {}).get("episode_id") or d.name
        extra = extras.get(eid) or extras.get(d.name) or {}
        eps.append({"episode_id": eid, "path": str(d), "output_dir": str(out_dir),
                    "run": run, "scores": scores, "identity_hint": hint,
                    "instance_id": ((run or {}).get("instance") or {}).get("instance_id") or extra.get("instance_id"),
                    "wall_s": extra.get("wall_s"), "usage": extra.get("usage"),
                    "error": _row_error(extra), "evidence": bag_evidence(d)})
    have = {e["episode_id"] for e in eps} | {Path(e["path"]).name for e in eps}
    for eid, row in extras.items():
        if eid not in have:  # the runner attempted it, but no episode directory exists
            eps.append({"episode_id": eid, "path": None, "output_dir": str(out_dir), "run": None, "scores": None,
                        "identity_hint": hint or {"tested_system": row.get("system"),
                                                  "task_condition": row.get("condition")},
                        "instance_id": row.get("instance_id"), "wall_s": row.get("wall_s"),
                        "usage": row.get("usage"), "error": _row_error(row) or "no episode record"})
    seen = {e["instance_id"] for e in eps}
    for iid in attempt.get("missing", []):
        if iid not in seen:
            eps.append({"episode_id": f"missing:{out_dir.name}:{iid}", "path": None, "output_dir": str(out_dir),
                        "run": None, "scores": None, "identity_hint": hint, "instance_id": iid,
                        "wall_s": None, "usage": None, "error": attempt.get("error") or "no episode record"})
    return eps


def load(roots) -> list[dict]:
    eps = []
    for root in roots:
        for out_dir in output_dirs(Path(root)):
            eps += load_output_dir(out_dir)
    return eps


def unit(ep: dict) -> str:
    """The attempt's task unit: instance#repeat (the instance alone without a repeat). An
    instance of a held-out binding is the unit of its twin (instance.binding_twin: the same
    draws with the default objects), so `report --compare` pairs two bindings unit by unit."""
    run = ep.get("run") or {}
    rep = run.get("repeat")
    iid = (run.get("instance") or {}).get("binding_twin") or ep.get("instance_id") or ep["episode_id"]
    return f"{iid}#{rep}" if rep is not None else str(iid)


def resolve(attempts) -> tuple[list[dict], dict]:
    """One result per episode unit (instance, repeat): the first scored attempt, else
    the last attempt (unresolved). Returns (results, coverage)."""
    by_unit: dict[str, list[dict]] = {}
    for a in attempts:
        a["unit"] = unit(a)
        by_unit.setdefault(a["unit"], []).append(a)
    results, duplicated, unresolved = [], [], []
    for u, group in sorted(by_unit.items()):
        good = [a for a in group if is_scored(a)]
        if len(good) > 1:
            duplicated.append(u)
        if not good:
            unresolved.append(u)
        results.append(good[0] if good else group[-1])
    return results, {"units": len(by_unit), "duplicated": duplicated, "unresolved": unresolved,
                     "retried": sorted(u for u, g in by_unit.items() if len(g) > 1)}
