"""Paired comparison of two cells on the task units both ran (`report --compare`).

One result per unit and arm (episodes.resolve: the first scored attempt, else
the last one), the units clustered as the relative rule resamples them (task
families, which hold pairs and repeats). Per rate, the candidate's and the
reference's k/N, the difference with its paired 95 % interval and the exact
test of no difference (core/paired.py: Bonett-Price, McNemar exact with one
unit per cluster, else a sign-flip permutation test over clusters).

* success: PASS of the unit's result (valid completion in a final scores.json;
  an unscored result is not a PASS), over every unit both arms attempted;
* selection, valid and physical completion, SR: over the units scored in both
  arms (a unit scored in one arm only is listed, never counted as a failure).

A fixed-N analysis: valid for a campaign whose episode count was fixed in
advance, not for one that stopped on its results (campaign/sequential).
"""
from __future__ import annotations

from labference_ros.core import populations as pop
from labference_ros.core.paired import paired_difference

from . import accounting as acc
from .bootstrap import clusters
from .episodes import resolve

LEVEL = "family"


def _results_by_unit(attempts) -> dict[str, dict]:
    results, _ = resolve([dict(a) for a in attempts])
    return {r["unit"]: r for r in results}


def _binary(name, chain):
    if name == "success":
        return lambda r: acc.outcome(r) == acc.PASS
    if name == "selection":
        return lambda r: r["scores"].get("first_choice_correct") is True
    if name == "valid_completion":
        return lambda r: r["scores"].get("valid_complete") is True
    if name == "physical_completion":
        return lambda r: r["scores"].get("physically_complete") is True
    if name == "SR":
        return lambda r: bool(pop.step_chain(r["scores"], chain)[-1])
    raise KeyError(name)


SCORED_METRICS = ("selection", "valid_completion", "physical_completion", "SR")


def paired_outcomes(candidate_attempts, reference_attempts, level: str = LEVEL) -> tuple[list[list[str]], dict, dict]:
    """Clusters of the units both arms attempted (lists of unit ids) and each arm's
    unit -> result."""
    cand, ref = _results_by_unit(candidate_attempts), _results_by_unit(reference_attempts)
    common = sorted(set(cand) & set(ref))
    stand_ins = [{"unit": u, "episode_id": u, "run": cand[u].get("run") or ref[u].get("run")} for u in common]
    return [[e["unit"] for e in cl] for cl in clusters(stand_ins, level)], cand, ref


def paired_comparison(candidate_attempts, reference_attempts, chain=(), level: str = LEVEL) -> dict:
    groups, cand, ref = paired_outcomes(candidate_attempts, reference_attempts, level)
    both_scored = {u for cl in groups for u in cl if pop.is_scored(cand[u]) and pop.is_scored(ref[u])}
    names = ["success"] + [m for m in SCORED_METRICS if m != "SR" or chain]
    metrics = {}
    for name in names:
        y = _binary(name, chain)
        keep = (lambda u: True) if name == "success" else (lambda u: u in both_scored)
        table = [[(y(cand[u]), y(ref[u])) for u in cl if keep(u)] for cl in groups]
        metrics[name] = paired_difference([t for t in table if t])
    units = sum(len(cl) for cl in groups)
    return {"level": level, "units": units, "clusters": len(groups), "scored_in_both": len(both_scored),
            "scored_in_one_arm_only": sorted(u for cl in groups for u in cl if u not in both_scored),
            "population": {"success": "every unit both arms attempted (unscored = not PASS)",
                           **{m: "units scored in both arms" for m in SCORED_METRICS}},
            "metrics": metrics}


# -- text ----------------------------------------------------------------------------
TEST_NAMES = {"mcnemar_exact": "McNemar exact", "sign_flip_exact": "sign-flip permutation over clusters, exact",
              "sign_flip_monte_carlo": "sign-flip permutation over clusters, Monte Carlo"}


def _pp(x) -> str:
    return "n/a" if x is None else f"{100 * x:+.1f} pp"


def format_metric(name: str, m: dict) -> str:
    if not m["n"]:
        return f"{name:<20}no paired units"
    p = m.get("p_value")
    return (f"{name:<20}{m['candidate_k']}/{m['n']} vs {m['reference_k']}/{m['n']}: {_pp(m['estimate'])} "
            f"[{_pp(m['lo'])}, {_pp(m['hi'])}]  ({m['candidate_only']} only candidate, {m['reference_only']} only "
            f"reference; {TEST_NAMES.get(m.get('test'), m.get('test'))} p = {p:.3g})")


def format_paired(p: dict) -> str:
    lines = [f"paired         {p['units']} units in {p['clusters']} {p['level']} clusters, {p['scored_in_both']} "
             f"scored in both; candidate - reference, 95% interval (Bonett-Price, design-effect adjusted for "
             f"clusters), exact test of no difference"]
    lines += [format_metric(name, m) for name, m in p["metrics"].items()]
    return "\n".join(lines)
