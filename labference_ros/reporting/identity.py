"""Result identities (paper 7.4), read from run.json and checked before aggregation.

CELL fields name a report cell (what is compared); SHARED fields must agree
within a cell, and REPORT_WIDE fields across the whole report, or the results
are refused with the differing fields named. A field a run does not record is
None and only matches None.
"""
from __future__ import annotations

import hashlib
import json


def _hash(value) -> str | None:
    if not value:
        return None
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def _get(d: dict, *path):
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


def identity(run: dict) -> dict:
    task = run.get("task") or {}
    contract = task.get("contract") or {}
    obs, iv, pol = run.get("observation") or {}, run.get("intervention") or {}, run.get("policy") or {}
    versions, assets = run.get("versions") or {}, run.get("assets") or {}
    return {
        "task": task.get("contract_id"),
        "task_condition": contract.get("condition") or _get(run, "instance", "condition"),
        "task_version": contract.get("version"),
        "contract_hash": task.get("contract_hash"),
        "evaluation_version": versions.get("evaluation") or versions.get("labference_ros"),
        "records_schema": run.get("records_schema"),
        "asset_revision": assets.get("revision") or _hash({k: v for k, v in assets.items()
                                                           if k != "layout_revision"}),
        "layout_revision": assets.get("layout_revision") or versions.get("layout"),
        "tested_system": pol.get("name") or pol.get("system"),
        "observation_condition": obs.get("condition") or obs.get("name"),
        "action_convention": pol.get("action_spec_hash") or _hash(pol.get("action_spec")),
        "history_protocol": obs.get("history_protocol") or obs.get("history"),
        "intervention_mode": iv.get("mode", "none"),
        "intervention_site": iv.get("site"),
        # Full-rollout support and checkpoint continuations never share a cell.
        "intervention_protocol": iv.get("protocol"),
        # A support the system could not take never shares a cell with delivered support.
        "intervention_compatibility": _incompatible(iv.get("compatibility")),
        # Chunks checked against the Franka envelope (safety:=franka) or not (None): never pooled.
        "safety": pol.get("safety"),
        # The cell's object binding (a held-out one; None: the default objects): never pooled.
        "binding": _get(run, "instance", "binding") or None,
    }


def _incompatible(statuses) -> str | None:
    """None when every support was compatible (or none was asked for), else the
    non-compatible statuses, e.g. 'replace:state=incompatible:action_only'."""
    if not isinstance(statuses, dict):
        return None
    bad = sorted(f"{site}={status}" for site, status in statuses.items() if status != "compatible")
    return "+".join(bad) or None


CELL = ("tested_system", "task_condition", "observation_condition", "intervention_mode", "intervention_site",
        "intervention_protocol", "intervention_compatibility", "safety", "binding")
SHARED = ("task", "task_version", "contract_hash", "action_convention", "history_protocol")
REPORT_WIDE = ("evaluation_version", "records_schema", "asset_revision", "layout_revision")


class IdentityMismatch(ValueError):
    def __init__(self, fields: dict, scope: str):
        self.fields = fields  # field -> sorted distinct values
        names = ", ".join(f"{k} ({' vs '.join(map(str, v))})" for k, v in sorted(fields.items()))
        super().__init__(f"refusing to aggregate {scope}: differing {names}")


def _differing(ids: list[dict], names) -> dict:
    out = {}
    for f in names:
        values = sorted({json.dumps(i.get(f)) for i in ids})
        if len(values) > 1:
            out[f] = [json.loads(v) for v in values]
    return out


def cell_name(cell: dict, sep: str = " / ") -> str:
    """A cell as text, FIELD=VALUE over its recorded fields (the report, the relative
    rule, report.html and selector errors all name cells this way)."""
    return sep.join(f"{k}={v}" for k, v in cell.items() if v not in (None, ""))


def cell_key(ident: dict) -> tuple:
    return tuple(ident.get(f) for f in CELL)


def _hinted_cell(hint: dict, keys: list[tuple]) -> tuple:
    given = {f: hint.get(f) for f in CELL if hint.get(f) not in (None, "")}
    matches = [k for k in keys if all(dict(zip(CELL, k)).get(f) == v for f, v in given.items())]
    return matches[0] if len(matches) == 1 else tuple(hint.get(f) for f in CELL)


def group_checked(episodes) -> dict[tuple, list[dict]]:
    """Cells of episodes after the identity checks; raises IdentityMismatch."""
    episodes = list(episodes)
    ids = [identity(e["run"]) if e.get("run") else None for e in episodes]
    checked = [i for i in ids if i is not None]
    wide = _differing(checked, REPORT_WIDE)
    if wide:
        raise IdentityMismatch(wide, "the report")
    cells: dict[tuple, list[int]] = {}
    for i, ident in enumerate(ids):
        if ident is not None:
            cells.setdefault(cell_key(ident), []).append(i)
    for i, ident in enumerate(ids):
        if ident is None:
            # An attempt that died before run.json joins the one cell agreeing with
            # what its launcher was asked for (identity_hint); it has nothing to check.
            cells.setdefault(_hinted_cell(episodes[i].get("identity_hint") or {}, list(cells)), []).append(i)
    for key, idx in cells.items():
        diff = _differing([ids[i] for i in idx if ids[i] is not None], SHARED)
        if diff:
            raise IdentityMismatch(diff, "cell " + "/".join(map(str, key)))
    return {k: [episodes[i] for i in v] for k, v in sorted(cells.items(), key=lambda kv: json.dumps(kv[0]))}
