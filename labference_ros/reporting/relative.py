"""The relative rule of the control protocol: a candidate arm against a reference arm.

Over the task units both arms ran (instance and repeat), a paired cluster
bootstrap resamples task families (2,000 draws, seed 240926), keeping every
attempt of a unit in both arms, both branches of a pair and all units of a
family in one block. Per draw, with all attempts (PASS, FAIL, ERROR) of the
drawn units:

  cost ratio  = (cost total / successes)_candidate / (cost total / successes)_reference
  time ratio  = (time total / successes)_candidate / (time total / successes)_reference
  success difference = success rate_candidate - success rate_reference

The rule passes only if the upper bound of the 95 % interval (percentile
97.5) of both ratios is below 1 and the lower bound (percentile 2.5) of the
success difference is above -3 percentage points. Every draw must have
defined metrics: a draw with zero successes in either arm, or a reference
total of zero, leaves the ratios undefined and with them the rule, as does
unknown cost or time in any attempt. An efficiency / non-inferiority rule,
not proof of higher success. Pure logic: the inputs are loaded attempts.
"""
from __future__ import annotations

import numpy as np

from . import accounting as acc
from .bootstrap import DRAWS, SEED, Resampler
from .episodes import unit
from .identity import CELL, cell_name
from .paired_comparison import format_paired, paired_comparison

LEVEL = "family"  # the protocol resamples task families
SUCCESS_MARGIN = 0.03  # lower bound of the success difference must be above -3 percentage points
CANDIDATE, REFERENCE = "candidate", "reference"
METRICS = ("cost_per_success_ratio", "time_per_success_ratio", "success_difference")


class CellSelectionError(ValueError):
    pass


def parse_selector(text: str) -> dict:
    """'SYSTEM' or 'field=value[,field=value...]' over the cell fields (identity.CELL)."""
    if "=" not in text:
        return {"tested_system": text}
    out = {}
    for part in text.split(","):
        field, sep, value = part.partition("=")
        field = field.strip()
        if not sep or field not in CELL:
            raise CellSelectionError(f"bad cell selector {text!r}: use SYSTEM or FIELD=VALUE[,...] "
                                     f"with FIELD one of {', '.join(CELL)}")
        out[field] = value.strip()
    return out


def select_cell(cells: dict[tuple, list], text: str) -> tuple:
    """The one cell key matching the selector; refuses none or several, listing the cells."""
    want = parse_selector(text)
    matches = [k for k in cells if all(str(dict(zip(CELL, k)).get(f)) == v for f, v in want.items())]
    if len(matches) == 1:
        return matches[0]
    listing = "; ".join(cell_name(dict(zip(CELL, k)), ", ") for k in cells)
    what = "no cell" if not matches else f"{len(matches)} cells"
    raise CellSelectionError(f"{what} match {text!r}; cells: {listing or 'none'}")


def _tag(attempts, arm: str) -> list[dict]:
    """Shallow copies carrying their arm and unit (instance#repeat), so the two arms'
    attempts of one unit share a bootstrap cluster."""
    return [dict(a, arm=arm, unit=unit(a)) for a in attempts]


def _sums(attempts) -> dict:
    """Per-arm sums one draw adds up: attempts, successes, time and cost totals."""
    out = {}
    for arm in (CANDIDATE, REFERENCE):
        rows = [a for a in attempts if a["arm"] == arm]
        times, costs = [acc.wall_s(a) for a in rows], [acc.cost(a) for a in rows]
        out[arm] = {"attempts": len(rows), "successes": sum(acc.outcome(a) == acc.PASS for a in rows),
                    "time": sum(t for t in times if t is not None), "cost": sum(c for c in costs if c is not None),
                    "time_unknown": sum(t is None for t in times), "cost_unknown": sum(c is None for c in costs)}
    return out


def _metric_arrays(s: dict) -> dict:
    """metric -> (values over draws, {reason: per-draw undefined mask}) from per-arm sum arrays."""
    c, r = s[CANDIDATE], s[REFERENCE]
    no_success = {"candidate has no success": c["successes"] == 0,
                  "reference has no success": r["successes"] == 0}
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "cost_per_success_ratio": ((c["cost"] / c["successes"]) / (r["cost"] / r["successes"]),
                                       {**no_success, "reference cost total is zero": r["cost"] == 0}),
            "time_per_success_ratio": ((c["time"] / c["successes"]) / (r["time"] / r["successes"]),
                                       {**no_success, "reference time total is zero": r["time"] == 0}),
            "success_difference": (c["successes"] / c["attempts"] - r["successes"] / r["attempts"],
                                   {"an arm has no attempt": (c["attempts"] == 0) | (r["attempts"] == 0)}),
        }


_UNKNOWN_INPUT = {"cost_per_success_ratio": "cost", "time_per_success_ratio": "time"}
_FAILED = {"cost_ratio_upper_below_1": "upper 95% bound of the cost-per-success ratio is not below 1",
           "time_ratio_upper_below_1": "upper 95% bound of the time-per-success ratio is not below 1",
           "success_difference_lower_above_margin":
               f"lower 95% bound of the success difference is not above -{100 * SUCCESS_MARGIN:g} "
               "percentage points"}


def relative_rule(candidate_attempts, reference_attempts, draws: int = DRAWS, seed: int = SEED) -> dict:
    """The rule over the units both arms attempted; see the module docstring."""
    tagged = _tag(candidate_attempts, CANDIDATE) + _tag(reference_attempts, REFERENCE)
    units = {arm: {a["unit"] for a in tagged if a["arm"] == arm} for arm in (CANDIDATE, REFERENCE)}
    common = units[CANDIDATE] & units[REFERENCE]
    paired = [a for a in tagged if a["unit"] in common]
    res = Resampler(paired, LEVEL, draws, seed)
    totals = _sums(paired)
    out = {"level": LEVEL, "draws": draws, "seed": seed, "ci": "percentile 95%",
           "success_margin_pp": 100 * SUCCESS_MARGIN,
           "paired_units": len(common), "families": len(res.clusters),
           "unpaired_units": {arm: sorted(units[arm] - common) for arm in units}, "totals": totals,
           "metrics": {}, "criteria": {}, "verdict": "undefined", "reasons": []}
    reasons = out["reasons"]
    if not common:
        reasons.append("no task unit was attempted by both arms")
        return out
    per_cluster = [_sums(cl) for cl in res.clusters]

    def arrays(weights) -> dict:
        return {arm: {k: weights @ np.array([float(p[arm][k]) for p in per_cluster])
                      for k in ("attempts", "successes", "time", "cost")} for arm in (CANDIDATE, REFERENCE)}

    point, drawn = _metric_arrays(arrays(np.ones((1, len(per_cluster))))), _metric_arrays(arrays(res.counts))
    for m in METRICS:
        iv = out["metrics"][m] = {"estimate": None, "lo": None, "hi": None, "undefined_draws": {}, "reason": None}
        what = _UNKNOWN_INPUT.get(m)
        unknown = what and {arm: t[f"{what}_unknown"] for arm, t in totals.items() if t[f"{what}_unknown"]}
        if unknown:  # unknown usage is unknown: no total, no ratio
            iv["reason"] = f"{what} unknown for " + ", ".join(f"{n} {arm} attempt(s)" for arm, n in unknown.items())
            reasons.append(f"{m}: {iv['reason']}")
            continue
        values, masks = drawn[m]
        undefined = np.zeros(draws, dtype=bool)
        for why, mask in masks.items():
            undefined |= mask
            if mask.any():
                iv["undefined_draws"][why] = int(mask.sum())
        on_sample = [why for why, mask in point[m][1].items() if mask.any()]
        if not on_sample:
            iv["estimate"] = float(point[m][0][0])
        if on_sample or undefined.any():  # every draw must have defined metrics
            iv["reason"] = "; ".join([f"on the observed sample: {w}" for w in on_sample]
                                     + [f"{n} of {draws} draws: {w}" for w, n in iv["undefined_draws"].items()])
            reasons.append(f"{m} undefined ({iv['reason']})")
            continue
        lo, hi = np.percentile(values, [2.5, 97.5])
        iv["lo"], iv["hi"] = float(lo), float(hi)
    if reasons:
        return out
    mt = out["metrics"]
    out["criteria"] = {
        "cost_ratio_upper_below_1": mt["cost_per_success_ratio"]["hi"] < 1,
        "time_ratio_upper_below_1": mt["time_per_success_ratio"]["hi"] < 1,
        "success_difference_lower_above_margin": mt["success_difference"]["lo"] > -SUCCESS_MARGIN,
    }
    reasons += [_FAILED[k] for k, ok in out["criteria"].items() if not ok]
    out["verdict"] = "pass" if all(out["criteria"].values()) else "fail"
    return out


def select_pair(cells: dict[tuple, list], candidate: str, reference: str) -> tuple[tuple, tuple]:
    """The two cell keys a comparison names; refuses a bad selector or the same cell twice."""
    ck, rk = select_cell(cells, candidate), select_cell(cells, reference)
    if ck == rk:
        raise CellSelectionError(f"{candidate!r} and {reference!r} name the same cell")
    return ck, rk


def compare_cells(cells: dict[tuple, list], candidate: str, reference: str,
                  draws: int = DRAWS, seed: int = SEED, chain=()) -> dict:
    """The rule between two report cells named by selectors (see parse_selector), and
    the paired comparison of their rates (reporting/paired_comparison.py; chain: the
    SR steps of the candidate's task)."""
    ck, rk = select_pair(cells, candidate, reference)
    return {"candidate": dict(zip(CELL, ck)), "reference": dict(zip(CELL, rk)),
            "candidate_selector": candidate, "reference_selector": reference,
            **relative_rule(cells[ck], cells[rk], draws, seed),
            "paired": paired_comparison(cells[ck], cells[rk], chain)}


# -- text ----------------------------------------------------------------------------
def _bounds(iv: dict, pct: bool) -> str:
    f = (lambda x: f"{100 * x:+.1f} pp") if pct else (lambda x: f"{x:.3g}")
    if iv["lo"] is None:
        est = "undefined" if iv["estimate"] is None else f"{f(iv['estimate'])}, no interval"
        return f"{est} ({iv['reason']})" if iv.get("reason") else est
    return f"{f(iv['estimate'])} [{f(iv['lo'])}, {f(iv['hi'])}]"


def format_comparison(c: dict) -> str:
    m = c["metrics"]
    lines = [f"== relative rule: {cell_name(c['candidate'])}  vs  {cell_name(c['reference'])}",
             f"verdict        {c['verdict'].upper()}"
             + (f"  ({'; '.join(c['reasons'])})" if c["reasons"] else ""),
             f"paired units   {c['paired_units']} in {c['families']} famil{'y' if c['families'] == 1 else 'ies'}; "
             f"unpaired candidate {len(c['unpaired_units'][CANDIDATE])}, "
             f"reference {len(c['unpaired_units'][REFERENCE])}; {c['draws']} draws resampling task "
             f"{c['level']} blocks, seed {c['seed']}",
             f"cost/success ratio  {_bounds(m['cost_per_success_ratio'], False)}  (upper bound must be < 1)",
             f"time/success ratio  {_bounds(m['time_per_success_ratio'], False)}  (upper bound must be < 1)",
             f"success difference  {_bounds(m['success_difference'], True)}  "
             f"(lower bound must be > -{c['success_margin_pp']:g} pp)"]
    if c.get("paired"):
        lines.append(format_paired(c["paired"]))
    return "\n".join(lines)
