"""`labference report`: identity-checked cells, section 7 metrics, accounting, CIs.

Per cell (tested system x task condition x observation condition x
intervention): the population metrics over one result per registered episode,
the accounting over every attempt, and cluster-bootstrap 95 % intervals.
"""
from __future__ import annotations

import json
from pathlib import Path

from labference_ros.core import populations as pop
from labference_ros.core.external_events import population_metrics
from labference_ros.core.proportions import format_count
from labference_ros.core.records import write_json_atomic, write_text_atomic
from labference_ros.tasks import available, family_of_contract_id

from . import accounting as acc
from . import bindings
from . import design
from . import oracle_gains
from .bootstrap import DRAWS, SEED, Resampler
from .diagnose import attribution_counts
from .episodes import load, population_certification, registered_instances, resolve
from .identity import CELL, cell_name, group_checked
from .relative import compare_cells, select_pair
from .runtime import runtime, wall_latencies

REPORT_SCHEMA = 1


# Each interval metric is a ratio of sums over episodes: eps -> (numerator, denominator).
def _sel(eps):
    r = pop.reach(eps, 1)
    return r["N_correct"], r["N_run"]


def _choice(key, population="population", track="all_decisions"):
    def f(eps):
        c = pop.choice(eps)[track]
        return c[key], c[population]
    return f


def _execution(count_key, n_key):
    def f(eps):
        x = pop.execution(eps)
        return x[count_key], x[n_key]
    return f


def _completion(kind):
    def f(eps):
        c = pop.completion(eps)
        return c[kind]["count"], c["n"]
    return f


def _chain_metric(chain, per_episode):
    """A cell metric over each scored episode's step chain (True/False per step)."""
    def f(eps):
        if not chain:
            return None, 0
        chains = [pop.step_chain(e["scores"], chain) for e in pop.scored(eps)]
        return sum(per_episode(z) for z in chains), len(chains)
    return f


def _sr(chain):
    return _chain_metric(chain, lambda steps: steps[-1])  # the whole chain held


def _ssr(chain):
    return _chain_metric(chain, lambda steps: sum(steps) / len(steps))  # the share of steps that held


def _step(chain, index):
    return _chain_metric(chain, lambda steps: steps[index])  # this step and every earlier one held


def _pstate(eps):
    p = pop.pairs(eps)
    return (p["verified_correct"], p["N"]) if p["unresolved"] == 0 else (None, p["N"])


def _reach(decision, key, over):
    def f(eps):
        r = pop.reach(eps, decision)
        return r[key], r[over]
    return f


RESULT_INTERVALS = {"selection": _sel, "B_next": _choice("correct"), "C_id": _choice("identified"),
                    "accuracy_identified": _choice("correct", "identified"),
                    "B_next_first": _choice("correct", track="first_decision"),
                    "C_id_first": _choice("identified", track="first_decision"),
                    "E_fixed": _execution("K_confirmed", "K"),
                    "execution_given_correct_choice": _execution("executed_given_correct_choice", "n_correct_choice"),
                    "valid_completion": _completion("valid"), "physical_completion": _completion("physically"),
                    "clean_completion": _completion("clean"), "recovered_completion": _completion("recovered"),
                    "P_state": _pstate}


def reach_intervals(decisions: int) -> dict:
    """Per native decision d_k: N_reach/N_run, N_correct/N_reach and N_correct/N_run."""
    out = {}
    for d in range(1, decisions + 1):
        out[f"reach_d{d}"] = _reach(d, "N_reach", "N_run")
        out[f"correct_given_reach_d{d}"] = _reach(d, "N_correct", "N_reach")
        out[f"correct_per_run_d{d}"] = _reach(d, "N_correct", "N_run")
        out[f"identified_given_reach_d{d}"] = _reach(d, "N_identified", "N_reach")
    return out


class TaskFamilyMissing(LookupError):
    """A cell's runs were scored by a task family this installation does not have."""


class EvaluationStepUnknown(LookupError):
    """A cell's runs name an SR/SSR step (run.json task.evaluation_steps) that the
    installed task family has no predicate for."""


def _family_of(contract_id: str):
    try:
        return family_of_contract_id(contract_id)
    except KeyError as exc:
        raise TaskFamilyMissing(
            f"cannot compute SR/SSR for runs of contract {contract_id!r}: its task family "
            f"{contract_id.split('.', 1)[0]!r} is not installed (installed: {', '.join(available()) or 'none'}); "
            "install the package that provides it (entry point group 'labference.tasks')") from exc


def family_report_lines(episodes) -> dict[str, str]:
    """The cell's task family's own lines (TaskFamily.report_lines) over its episodes' scores."""
    for ep in episodes:
        contract_id = ((ep.get("run") or {}).get("task") or {}).get("contract_id")
        if contract_id:
            return _family_of(contract_id).report_lines([e.get("scores") or {} for e in episodes])
    return {}


def evaluation_steps(episodes) -> tuple:
    """The SR/SSR step chain of the cell's task, ((name, predicate), ...): the names as
    run.json records them (or, for runs recorded before it did, the task family's
    contract of that condition), each tested by the family's predicate
    (TaskFamily.evaluation_chain). A cell holds one contract (its hash is a shared
    identity field). A family that is not installed raises TaskFamilyMissing, a step
    name the family does not know EvaluationStepUnknown."""
    for ep in episodes:
        run = ep.get("run") or {}
        task = run.get("task") or {}
        if not task.get("contract_id"):
            continue
        fam = _family_of(task["contract_id"])
        names = pop.recorded_steps(ep)
        if not names:
            condition = (task.get("contract") or {}).get("condition") or (run.get("instance") or {}).get("condition")
            names = tuple(fam.contract_for(condition).evaluation_steps)
        try:
            return fam.evaluation_chain(names)
        except ValueError as exc:
            raise EvaluationStepUnknown(
                f"cannot compute SR/SSR for runs of contract {task['contract_id']!r} "
                f"({ep.get('episode_id', '?')}): {exc}") from None
    return ()


def _success(eps):
    a = acc.accounting(eps)
    return a["PASS"], a["attempts"]


def _per_success(total_key):
    def f(eps):
        a = acc.accounting(eps)
        return a[total_key], a["PASS"]
    return f


ATTEMPT_RATES = {"success_rate": _success}
ATTEMPT_INTERVALS = {"time_per_success_s": _per_success("time_total_s"),
                     "cost_per_success_usd": _per_success("cost_total_usd")}


def cell_report(attempts: list[dict], registered: list[dict], level: str, draws: int, seed: int) -> dict:
    results, coverage = resolve(attempts)
    seen = {e.get("instance_id") for e in attempts}
    missing = sorted({i["instance_id"] for i in registered} - seen)
    coverage["missing"] = missing
    n_registered = coverage["units"] + len(missing) if registered else None
    reg_pairs = sorted({i["pair_id"] for i in registered if i.get("pair_id")}) or None
    res = Resampler(results, level, draws, seed)
    att = Resampler(attempts, level, draws, seed)
    chain = evaluation_steps(attempts)
    family_lines = family_report_lines(results)
    step_intervals = {"SR": _sr(chain), "SSR": _ssr(chain),
                      **{f"step_{name}": _step(chain, i) for i, (name, _) in enumerate(chain)}}
    metrics = pop.all_metrics(results, n_registered, reg_pairs, chain, wall_latencies=wall_latencies)
    rates = {**RESULT_INTERVALS, **step_intervals, **reach_intervals(len(metrics["reach"]))}
    # A condition with an external event at a hidden time: its coordination metrics apart.
    external = [(e.get("scores") or {}).get("external_event") for e in results]
    coordination = ({"coordination": population_metrics([r for r in external if r])}
                    if any(external) else {})
    return {
        **coordination,
        "coverage": coverage,
        "metrics": metrics,
        "accounting": acc.accounting(attempts),
        "family": family_lines,
        # Proportions: Wilson / design-effect Wilson with k/N (bootstrap beside it); ratios: bootstrap.
        "intervals": {**{k: res.rate_interval(f) for k, f in rates.items()},
                      **{k: att.rate_interval(f) for k, f in ATTEMPT_RATES.items()},
                      **{k: att.interval(f) for k, f in ATTEMPT_INTERVALS.items()}},
    }


def _shared_steps(cells: list[dict]) -> list[str]:
    """The step chain every cell uses (each cell's own is in metrics.steps.steps)."""
    chains = {tuple(c["metrics"]["steps"]["steps"]) for c in cells}
    return list(chains.pop()) if len(chains) == 1 else []


def _comparison(cells, candidate, reference, draws, seed, test) -> dict:
    """The fixed-N comparison (relative rule and paired rates) or the pre-registered sequential
    one, as the runs' campaign was designed (reporting/design.py)."""
    ck, rk = select_pair(cells, candidate, reference)
    kind, seq, arms = design.check(cells[ck], cells[rk], test)
    if kind == design.SEQUENTIAL:
        return {"design": kind, "candidate": dict(zip(CELL, ck)), "reference": dict(zip(CELL, rk)),
                "candidate_selector": candidate, "reference_selector": reference,
                "candidate_name": cell_name(dict(zip(CELL, ck))), "reference_name": cell_name(dict(zip(CELL, rk))),
                "sequential": design.sequential_comparison(cells[ck], cells[rk], seq, arms)}
    return {"design": kind, **compare_cells(cells, candidate, reference, draws, seed,
                                            chain=evaluation_steps(cells[ck]))}


def build(roots, level: str = "pair", draws: int = DRAWS, seed: int = SEED, comparisons=(), test=None) -> dict:
    """comparisons: (candidate, reference) cell selectors for the relative rule
    (reporting/relative.py); a selector matching no cell or several raises CellSelectionError.
    test: "fixed" or "sequential" to insist on one (default: the runs' recorded design);
    a test that does not match the design raises design.DesignMismatch."""
    attempts = load(roots)
    cells = group_checked(attempts)
    for candidate, reference in comparisons:  # refuse a bad selector or test before any bootstrap
        ck, rk = select_pair(cells, candidate, reference)
        design.check(cells[ck], cells[rk], test)
    out = []
    for key, eps in cells.items():
        dirs = sorted({e["output_dir"] for e in eps})
        registered = {i["instance_id"]: i for d in dirs for i in registered_instances(Path(d))}
        out.append({"cell": dict(zip(CELL, key)), "output_dirs": dirs, "design": design.cell_kind(eps),
                    **cell_report(eps, list(registered.values()), level, draws, seed),
                    "runtime": runtime(eps), "attribution": attribution_counts(eps),
                    "certification": _certification(dirs),
                    "partial_evidence": sorted(e["episode_id"] for e in eps if e.get("evidence") == "partial")})
    return {"report_schema": REPORT_SCHEMA, "roots": [str(r) for r in roots],
            "bootstrap": {"level": level, "draws": draws, "seed": seed, "ci": "percentile 95%"},
            "rate_intervals": {"confidence": 0.95, "independent": "wilson", "clustered": "wilson_design_effect",
                               "level": level},
            "sr_steps": _shared_steps(out), "cells": out,
            "bindings": bindings.groups(out, list(cells.values())),
            "comparisons": [_comparison(cells, c, r, draws, seed, test) for c, r in comparisons],
            "oracle_gains": oracle_gains.find(roots)}


def _certification(dirs) -> list[dict]:
    """The distinct certification summaries of the populations the cell's runs were
    fixed from (core.certificates.summary), without the per-instance list."""
    found = []
    for d in dirs:
        s = population_certification(Path(d))
        if s and s not in found:
            found.append(s)
    return found


# -- text ----------------------------------------------------------------------------
def pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def num(x, unit="") -> str:
    return "n/a" if x is None else f"{x:.3g}{unit}"


def ci(iv: dict, as_pct: bool = True) -> str:
    if iv.get("lo") is None:
        return ""
    f = pct if as_pct else num
    return f" [{f(iv['lo'])}, {f(iv['hi'])}]"


METHOD_TAGS = {"wilson": "W", "wilson_design_effect": "Wd"}


def rate_text(iv: dict) -> str:
    """A proportion as `75.0% 3/4 [30.1%, 95.4%]W` (W: Wilson, Wd: design-effect Wilson);
    `n/a 0/0` when its denominator is zero."""
    if iv.get("n") is None:
        return "n/a"
    count = format_count(iv["k"], iv["n"])
    if iv.get("estimate") is None:
        return f"n/a {count}"
    return f"{pct(iv['estimate'])} {count}{ci(iv)}{METHOD_TAGS.get(iv.get('method'), '')}"


def _latency_line(lat: dict) -> str:
    """Response latency, delivery of the triggering evidence to the first identified choice
    (sim time; wall time where the policy bridge stamped its records)."""
    def part(label, x):
        if not x or not x["n"]:
            return f"{label} n/a"
        return f"{label} median {num(x['median_s'], ' s')} mean {num(x['mean_s'], ' s')} (n={x['n']})"
    wall = lat.get("wall") or {}
    walls = (f"wall time: {part('all', wall.get('all_decisions'))}  {part('first decision', wall.get('first_decision'))}"
             if (wall.get("all_decisions") or {}).get("n") else "(wall time not recorded)")
    return (f"latency        sim time, delivery to first choice: {part('all', lat.get('all_decisions'))}  "
            f"{part('first decision', lat.get('first_decision'))}  {walls}")


def _request_latency_lines(req: dict) -> list[str]:
    """A remote policy's request latency (round trip, and the server's own timing), or
    nothing for a system that is not called over the network."""
    if not req.get("requests"):
        return []

    def stats(s: dict) -> str:
        return f"median {num(s['p50'], ' s')} p95 {num(s['p95'], ' s')} max {num(s['max'], ' s')}"
    lines = [f"requests       {req['requests']} to the policy server: round trip {stats(req['round_trip_s'])}"]
    lines += [f"               server's {key}: {stats(s)}" for key, s in req["server_timing"].items() if s]
    return lines


def format_cell(c: dict) -> str:
    m, a, iv, cov = c["metrics"], c["accounting"], c["intervals"], c["coverage"]
    name = cell_name(c["cell"])
    ch, comp, st = m["choice"]["all_decisions"], m["completion"], m["steps"]
    lines = [f"== {name}",
             f"coverage       units {cov['units']}, missing {len(cov['missing'])}, "
             f"unresolved {len(cov['unresolved'])}, duplicated {len(cov['duplicated'])}, retried {len(cov['retried'])}",
             *([f"design         sequential campaign: it stopped on its results, so these per-cell intervals are "
                f"descriptive; its comparison is the pre-registered test (--compare)"]
               if c.get("design") == design.SEQUENTIAL else []),
             *(["design         mixed: runs of a sequential campaign pooled with fixed-N runs; intervals descriptive"]
               if c.get("design") == "mixed" else []),
             f"selection      {rate_text(iv['selection'])}  (first decision correct / N_run)",
             f"completion     valid {rate_text(iv['valid_completion'])}  physical {rate_text(iv['physical_completion'])}",
             f"               clean {rate_text(iv['clean_completion'])}  recovered {rate_text(iv['recovered_completion'])}  "
             f"(valid bounds {pct(comp['valid_bounds']['lower'])}..{pct(comp['valid_bounds']['upper'])})"]
    for r in m["reach"]:
        d = r["decision"]
        lines.append(f"reach d{d}       N_reach/N_run {rate_text(iv[f'reach_d{d}'])}  "
                     f"N_correct/N_reach {rate_text(iv[f'correct_given_reach_d{d}'])}  "
                     f"N_correct/N_run {rate_text(iv[f'correct_per_run_d{d}'])}  "
                     f"identified|reach {rate_text(iv[f'identified_given_reach_d{d}'])}")
    lines += [f"choice         B_next {rate_text(iv['B_next'])}  C_id {rate_text(iv['C_id'])}  "
              f"accuracy|identified {rate_text(iv['accuracy_identified'])} (coverage {pct(ch['coverage'])}; "
              f"{ch['population']} decisions in {m['choice']['episodes']} episodes)",
              f"               first decision: B_next {rate_text(iv['B_next_first'])}  C_id {rate_text(iv['C_id_first'])}",
              f"execution      E_fixed {rate_text(iv['E_fixed'])} (over K)  "
              f"given own correct choice {rate_text(iv['execution_given_correct_choice'])}",
              f"pairs          P_state {rate_text(iv['P_state'])}  N={m['pairs']['N']} "
              f"bounds {pct(m['pairs']['lower'])}..{pct(m['pairs']['upper'])}",
              f"steps          SR {rate_text(iv['SR'])}  SSR {rate_text(iv['SSR'])}  "
              + "  ".join(f"{k} {rate_text(iv.get(f'step_{k}') or {})}" for k in st["per_step"]),
              _latency_line(m.get("latency") or {}),
              *_request_latency_lines((c.get("runtime") or {}).get("policy_requests") or {}),
              f"accounting     attempts {a['attempts']} (PASS {a['PASS']}, FAIL {a['FAIL']}, ERROR {a['ERROR']})  "
              f"success {rate_text(iv['success_rate'])}  "
              f"time/success {num(a['time_per_success_s'], ' s')}{ci(iv['time_per_success_s'], False)} "
              f"(unknown {a['time_unknown']})  cost/success {num(a['cost_per_success_usd'], ' USD')} "
              f"(unknown {a['cost_unknown']})  overload rejections {num(a['overload_rejections'])} "
              f"(unknown {a['rejections_unknown']})  cost/success at ${a['rejection_sensitivity_usd']:g}/rejection "
              f"{num(a['cost_per_success_usd_rejection_sensitivity'], ' USD')}"]
    lines += _coordination_lines(c.get("coordination"))
    lines += [f"{label:<15}{text}" for label, text in (c.get("family") or {}).items()]
    lines += [f"certification  population: {_certification_text(s)}" for s in c.get("certification") or []]
    partial = c.get("partial_evidence") or []
    if partial:
        lines.append(f"evidence       partial bag for {len(partial)} episode(s): {', '.join(partial)} (the bag ends "
                     f"before the episode did; `labference audit` compares it only that far, exit 3)")
    lines.append(format_confusion(m["confusion"]))
    return "\n".join(lines)


def _coordination_lines(co: dict | None) -> list[str]:
    """The external event's metrics (SciHorizon-eLab eqs. 8-9) over the episodes that reached it."""
    if not co:
        return []
    r = co["response"]
    return [f"hidden event   reached {co['reached']}/{co['episodes']} episodes (ended before it: {co['not_reached']}); "
            f"over those: premature violation (PVR) {rate_text(co['premature_violation'])}  "
            f"premature interactions {co['premature_interactions']} "
            f"({num(co['premature_interactions_per_episode'])} per episode)",
            f"               response latency, event to first identified choice (sim): median "
            f"{num(r['median_latency_s'], ' s')} mean {num(r['mean_latency_s'], ' s')} "
            f"[{num(r['min_latency_s'], ' s')}, {num(r['max_latency_s'], ' s')}] (n={r['n']})  "
            f"completion {rate_text(co['completion'])}"]


def _certification_text(s: dict) -> str:
    """How many generated instances the reference program certified, and why the others failed."""
    why = "; ".join(f"{r.get('instance_id')}: step {r.get('failing_step')}: {r.get('reason')}"
                    for r in s.get("rejections") or [])
    return (f"{s.get('certified')}/{s.get('instances')} generated instance(s) certified, {s.get('rejected')} "
            f"failed certification" + (f" ({why})" if why else "")
            + (f", {s['uncertified']} not certified" if s.get("uncertified") else ""))


def format_confusion(cm: dict) -> str:
    if not cm["rows"]:
        return "confusion      (no first decisions)"
    cols = cm["cols"]
    w = max(len(x) for x in cm["rows"] + cols + ["required"]) + 1
    out = ["confusion      required (rows) x chosen (cols)", "  " + "required".ljust(w) + "".join(c.rjust(w) for c in cols)]
    for r in cm["rows"]:
        out.append("  " + r.ljust(w) + "".join(str(cm["matrix"][r].get(c, 0)).rjust(w) for c in cols))
    out.append(f"  preferred {cm['preferred']} at {pct(cm['preferred_share'])} of identified choices "
               f"(balanced share {pct(cm['balanced_share'])})")
    return "\n".join(out)


def format_report(rep: dict) -> str:
    b = rep["bootstrap"]
    head = (f"Labference report: {len(rep['cells'])} cell(s); rates as estimate k/N [95% CI]: W = Wilson "
            f"(independent episodes), Wd = Wilson on the design-effect-adjusted n (clusters of {b['level']}s); "
            f"time/success: cluster bootstrap over {b['level']}s, {b['draws']} draws, seed {b['seed']}; "
            f"n/a = zero denominator or unknown")
    side_by_side = bindings.format_groups(rep.get("bindings") or [], rate_text)
    return "\n\n".join([head] + [format_cell(c) for c in rep["cells"]] + ([side_by_side] if side_by_side else []))


def write(rep: dict, out_dir: Path, plots: bool = True) -> list[str]:
    """report.json, the plot PNGs (unless plots=False) and the self-contained report.html."""
    from . import html_report, plots as plotting

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    images = plotting.render(rep) if plots else {}
    written = plotting.write_plots(out_dir, images)
    rep = {**rep, "plots": written}
    write_json_atomic(out_dir / "report.json", rep)
    page = out_dir / "report.html"
    write_text_atomic(page, html_report.render(rep, images, plots_skipped=not plots))
    return [str(out_dir / "report.json"), str(page)] + written


def dumps(rep: dict) -> str:
    return json.dumps(rep, sort_keys=True, indent=1)
