"""Which test a comparison may use: the campaign's pre-registered design, read from its records.

A campaign attempt's instances.locked.json carries the lock's design in its
meta (`{"kind": "fixed"}` or `{"kind": "sequential", "sequential": {...}}`,
campaign/runner.py); runs without it (plain launches, older campaigns) are
fixed-N. A fixed-N test (the relative rule, the paired comparison) on a
campaign that stopped on its results would overstate the evidence, and a
sequential test on runs that were never sequential would be one nobody
pre-registered: both are refused, as is a comparison across designs. A
sequential comparison is re-derived from the records with the locked test
(campaign/sequential.decide), so the report checks the runner's stop.
"""
from __future__ import annotations

import json
from pathlib import Path

from labference_ros.campaign.sequential import decide, outcome

from .episodes import resolve

FIXED, SEQUENTIAL = "fixed", "sequential"


class DesignMismatch(ValueError):
    """The requested test does not match how the runs were designed."""


def _meta(output_dir: str) -> dict:
    try:
        data = json.loads((Path(output_dir) / "instances.locked.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return (data.get("meta") or {}) if isinstance(data, dict) else {}


def cell_design(attempts) -> tuple[str, dict | None, set[str]]:
    """(kind, sequential design or None, campaign arm ids) of a cell's attempts; refuses a
    cell whose runs come from different designs."""
    kinds, designs, arms = set(), [], set()
    for out_dir in sorted({a["output_dir"] for a in attempts}):
        meta = _meta(out_dir)
        design = meta.get("design") or {"kind": FIXED}
        kinds.add(design.get("kind", FIXED))
        if design.get("kind") == SEQUENTIAL:
            designs.append(design["sequential"])
        if meta.get("arm"):
            arms.add(meta["arm"])
    if len(kinds) > 1:
        raise DesignMismatch(f"a cell mixes runs of a sequential campaign with fixed-N runs ({', '.join(sorted(arms))}); "
                             "report them apart")
    kind = kinds.pop() if kinds else FIXED
    return kind, (designs[0] if designs else None), arms


def cell_kind(attempts) -> str:
    """fixed, sequential, or mixed (a cell pooling both; only a comparison refuses that)."""
    try:
        return cell_design(attempts)[0]
    except DesignMismatch:
        return "mixed"


def check(candidate_attempts, reference_attempts, requested: str | None) -> tuple[str, dict | None, tuple]:
    """The design both cells share and the test to use; DesignMismatch otherwise."""
    ck, cdesign, carms = cell_design(candidate_attempts)
    rk, rdesign, rarms = cell_design(reference_attempts)
    if ck != rk:
        raise DesignMismatch(f"the candidate's runs are {ck} and the reference's {rk}: no valid test compares them")
    if requested and requested != ck:
        if ck == SEQUENTIAL:
            raise DesignMismatch("these runs come from a campaign with a pre-registered sequential test: a fixed-N "
                                 "test on them is not valid (it stopped on its results); use --test sequential")
        raise DesignMismatch("these runs were not designed sequentially (no sequential test in their campaign lock): "
                             "a sequential test on them was never pre-registered; use --test fixed")
    if ck != SEQUENTIAL:
        return ck, None, ()
    for comp in cdesign["comparisons"]:
        if comp["candidate"] in carms and comp["reference"] in rarms:
            return ck, cdesign, (comp["candidate"], comp["reference"])
    raise DesignMismatch(f"the campaign pre-registered no sequential comparison of arm(s) {', '.join(sorted(carms))} "
                         f"against {', '.join(sorted(rarms))}")


def _outcomes(attempts) -> dict[str, bool]:
    results, _ = resolve([dict(a) for a in attempts])
    return {r["instance_id"]: outcome(r["scores"]) for r in results
            if r.get("instance_id") and (r.get("scores") or {}).get("status") == "final"}


def sequential_comparison(candidate_attempts, reference_attempts, design: dict, arms: tuple) -> dict:
    """The locked sequential comparison re-derived from the records."""
    comp = next(c for c in design["comparisons"] if (c["candidate"], c["reference"]) == arms)
    one = {**design, "comparisons": [comp]}
    return decide(one, {arms[0]: _outcomes(candidate_attempts), arms[1]: _outcomes(reference_attempts)})[0]


def format_sequential(c: dict) -> str:
    s = c["sequential"]
    return "\n".join([
        f"== sequential comparison (pre-registered): {c['candidate_name']}  vs  {c['reference_name']}",
        f"decision       {s['status']}: {s['reason']}",
        f"units          {s['pairs']} read in locked order (last {s['last_unit']}); only candidate right "
        f"{s['candidate_only']}, only reference right {s['reference_only']}, both {s['both']}; "
        f"{s['test']}, alpha {s['alpha']:g}, at most {s['max_pairs']} units, prior Beta({s['prior']:g}, {s['prior']:g})"])
