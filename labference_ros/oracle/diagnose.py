"""diagnose_oracle: a checkpoint population x support conditions -> gain table.

Entry point for `labference diagnose-oracle` (CLI wiring lives in cli/main.py)."""
from __future__ import annotations

import sys

from labference_ros.core.metrics import rate
from labference_ros.reporting.checkpoint_populations import population_metrics, records_from_branches

from .checkpoints import prepare, read_population
from .continuation import DEFAULT_BUDGET_S, run_branch
from .gains import OUTCOMES, condition_row, interactions
from .supports import CHECKPOINT_CONTINUATION, parse_condition


def diagnose_oracle(population_path, system: str, conditions, *, params: dict | None = None,
                    budget_s: float = DEFAULT_BUDGET_S, specs=None, records_dir=None, safety: str = "none") -> dict:
    """conditions: strings like 'replace:state' or 'assist:state+replace:decision'.
    records_dir: every branch also writes its run records under it
    (<system>/<condition>/episodes/<checkpoint>/), which `labference report` reads.
    safety: "franka" runs every branch inside the Panda's envelope (continuation.run_branch)."""
    specs = specs if specs is not None else read_population(population_path)
    checkpoints = [prepare(s) for s in specs]
    parsed = {"base": ()} | {c: parse_condition(c) for c in conditions}
    branches = {name: [run_branch(cp, system, cond, params=params, budget_s=budget_s, records_dir=records_dir,
                                  safety=safety) for cp in checkpoints]
                for name, cond in parsed.items()}
    base = branches["base"]
    table = {}
    for name, rows in branches.items():
        row = condition_row(base, rows) if name != "base" else {"N": len(base), "compatibility": "compatible"}
        for o in OUTCOMES:
            if all(b.resolved for b in rows) and rows:
                row[f"mean_{o}"] = rate(sum(float(getattr(b, o)) for b in rows), len(rows))
        table[name] = row
    table["base"]["interface_errors"] = interface_errors(base)
    # Common-checkpoint continuations only; full-rollout interventions are a separate design.
    return {"system": system, "design": CHECKPOINT_CONTINUATION, "population": [
                {"checkpoint_id": cp.spec.checkpoint_id, "status": cp.status, "reason": cp.reason}
                for cp in checkpoints],
            "table": table, "interactions": interactions(table),
            # J/K populations, per-condition rates and gains with intervals (reporting/checkpoint_populations.py).
            "populations": population_metrics(records_from_branches(checkpoints, branches)),
            "branches": branches}


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def interface_errors(base) -> dict:
    """Interface measurements of the base branches at their checkpoints: the state
    readout error and the geometry errors of eq. 2 (invalid outputs counted apart)."""
    geo = [b.geometry_error for b in base if b.geometry_error is not None]
    valid = [g for g in geo if g["valid"]]
    return {"readout_abs_error_g_mean": _mean(b.readout_abs_error_g for b in base),
            "geometry_reports": len(geo), "geometry_invalid": len(geo) - len(valid),
            "geometry_e_p_m_mean": _mean(g["e_p_m"] for g in valid),
            "geometry_e_v_rad_mean": _mean(g["e_v_rad"] for g in valid)}


def _fmt(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, tuple):
        return "[" + ",".join(_fmt(v) for v in x) + "]"
    return f"{x:+.2f}" if isinstance(x, float) else str(x)


def format_table(result: dict) -> str:
    lines = [f"system {result['system']}: {sum(p['status'] == 'verified' for p in result['population'])}"
             f"/{len(result['population'])} checkpoints verified"]
    for p in result["population"]:
        if p["status"] != "verified":
            lines.append(f"  {p['checkpoint_id']}: {p['status']} ({p['reason']})")
    head = ("condition", "N", "compat", "choice s/b", "Δchoice", "done s/b", "Δdone", "bounds(done)",
            "delivered", "agree")
    lines.append(" | ".join(head))
    for name, r in result["table"].items():
        if r["compatibility"] != "compatible":
            lines.append(f"{name} | {r['N']} | {r['compatibility']}")
            continue
        if name == "base":
            e = r.get("interface_errors") or {}
            lines.append(f"base | {r['N']} | compatible | mean choice {_fmt(r.get('mean_choice_correct'))}"
                         f" | mean done {_fmt(r.get('mean_completed'))}"
                         f" | readout |err| mean {_fmt(e.get('readout_abs_error_g_mean'))} g"
                         f" | geometry e_p mean {_fmt(e.get('geometry_e_p_m_mean'))} m,"
                         f" e_v mean {_fmt(e.get('geometry_e_v_rad_mean'))} rad"
                         f" ({e.get('geometry_invalid', 0)} invalid of {e.get('geometry_reports', 0)})")
            continue
        lines.append(" | ".join([
            name, str(r["N"]), "compatible",
            f"{r['choice_correct_supported']}/{r['choice_correct_base']}", _fmt(r["gain_choice_correct"]),
            f"{r['completed_supported']}/{r['completed_base']}", _fmt(r["gain_completed"]),
            _fmt(r["completed_bounds"]), f"{r['delivered']}/{r['interventions']} ({_fmt(r['delivery_rate'])})",
            _fmt(r["agreement_rate"])]))
    for name, c in result["interactions"].items():
        lines.append(f"interaction {name}: " + ", ".join(f"{k} {_fmt(v)}" for k, v in c.items()))
    lines.extend(format_populations(result.get("populations")))
    return "\n".join(lines)


def _bounded(r: dict | None) -> str:
    """A fixed-population rate: count/N (rate), or its bounds while members are unresolved."""
    if not r or not r.get("N"):
        return "-"
    if r["rate"] is None:
        lo, hi = r["bounds"]
        return f"{r['count']}/{r['N']} bounds [{lo:.2f},{hi:.2f}]"
    return f"{r['count']}/{r['N']} ({r['rate']:.2f})"


def _gain(g: dict | None) -> str:
    if not g or g.get("gain") is None:
        return f"- ({g['unresolved']} unresolved)" if g and g.get("unresolved") else "-"
    iv = g.get("interval") or {}
    return f"{_fmt(g['gain'])} [{_fmt(iv.get('lo'))},{_fmt(iv.get('hi'))}]"


def format_populations(pops: dict | None) -> list[str]:
    """The paper's checkpoint populations (section 7): B_next and C_id over J,
    E_fixed over K, gains (eq. 3, errors reversed) with 95 % cluster-bootstrap intervals."""
    if not pops:
        return []
    v = pops.get("validity") or {}
    lines = [f"checkpoint populations: J = {len(pops['J'])}, K = {len(pops['K'])} of {v.get('registered', 0)} "
             f"registered (not delivered {len(v.get('not_evidence_delivered', []))}, not scorable "
             f"{len(v.get('not_native_scorable', []))}, K membership unknown {len(v.get('membership_unknown', []))})"]
    lines.append(" | ".join(("condition", "B_next (J)", "C_id (J)", "E_fixed (K)", "gain B_next",
                             "gain wrong (J)", "gain E_fixed", "gain done")))
    for name, c in pops["conditions"].items():
        if c.get("compatibility", "compatible") != "compatible":
            lines.append(f"{name} | {c['compatibility']}")
            continue
        metrics = (pops["gains"].get(name) or {}).get("metrics") or {}
        gains = [_gain(metrics.get(m)) if name != "base" else "" for m in
                 ("choice_correct", "wrong_choice", "subgoal_confirmed", "completed")]
        lines.append(" | ".join([name, _bounded(c.get("B_next")), _bounded(c.get("C_id")),
                                 _bounded(c.get("E_fixed")), *gains]).rstrip(" |"))
    return lines


def main(argv=None) -> int:
    """python -m labference_ros.oracle.diagnose POPULATION SYSTEM CONDITION..."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print(main.__doc__)
        return 2
    print(format_table(diagnose_oracle(argv[0], argv[1], argv[2:])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
