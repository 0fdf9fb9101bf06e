"""report.html: one self-contained page (inline CSS, plots as base64 PNG data URIs,
no script, no external resource) from a built report dict. Pure: render()
returns the text; every text from the records is escaped.

A number that is None prints as "unavailable" (zero denominator, unknown
usage, or not recorded), never as 0.
"""
from __future__ import annotations

import base64
import html

from labference_ros import __version__

from .identity import cell_name

UNAVAILABLE = "unavailable"

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5rem auto;max-width:1100px;color:#1d1d1d;
 padding:0 1rem;line-height:1.4}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.2rem;border-bottom:2px solid #4c72b0;padding-bottom:.2rem;
 margin-top:2rem}h3{font-size:1rem;margin:1.2rem 0 .4rem}
table{border-collapse:collapse;margin:.3rem 0 1rem;font-size:.85rem}
th,td{border:1px solid #c8c8c8;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#eef2f8}td.num{text-align:right;font-variant-numeric:tabular-nums}
.na{color:#8a5a00;font-style:italic}.muted{color:#666;font-size:.85rem}
.pass{background:#d9f2d9;font-weight:bold}.fail{background:#f8d7d7;font-weight:bold}
.undefined{background:#fff1c2;font-weight:bold}
img{max-width:100%;height:auto;border:1px solid #ddd;margin:.3rem 0}
code{background:#f3f3f3;padding:0 .2rem}
"""


def esc(x) -> str:
    return html.escape(str(x), quote=True)


# -- number formatting ---------------------------------------------------------------
def _na() -> str:
    return f'<span class="na">{UNAVAILABLE}</span>'


def pct(x) -> str:
    return _na() if x is None else esc(f"{100 * x:.1f}%")


def num(x, unit: str = "") -> str:
    return _na() if x is None else esc(f"{x:.4g}{unit}")


def ratio(k, n) -> str:
    return _na() if k is None or n is None else esc(f"{k:g} / {n:g}")


METHOD_NAMES = {"wilson": "Wilson", "wilson_design_effect": "design-effect Wilson"}


def interval(iv: dict | None, fmt=pct) -> str:
    if not iv or iv.get("lo") is None or iv.get("hi") is None:
        return _na()
    undefined = iv.get("undefined_draws") or 0
    extra = f", {undefined} undefined draws" if undefined else ""
    if iv.get("method"):  # a proportion: its method (and effective n when clustered)
        n_eff = f", n_eff {iv['effective_n']:.3g}" if iv.get("effective_n") is not None else ""
        extra = f", {METHOD_NAMES.get(iv['method'], iv['method'])}{n_eff}"
    clusters = f" ({iv['n_clusters']} clusters{extra})" if "n_clusters" in iv else ""
    return f"[{fmt(iv['lo'])}, {fmt(iv['hi'])}]{esc(clusters)}"


# -- building blocks -----------------------------------------------------------------
def table(head: list[str], rows: list[list[str]], numeric_from: int = 1) -> str:
    """Header cells are escaped here; row cells are already-rendered HTML fragments."""
    out = ["<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f'<td class="num">{c}</td>' if i >= numeric_from else f"<td>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def image(png: bytes | None, alt: str) -> str:
    if png is None:
        return f'<p class="muted">{esc(alt)}: no plot (no data).</p>'
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def _count(iv: dict | None, n) -> str:
    """k / N of an interval's proportion (n alone when the interval has no count)."""
    if iv and iv.get("k") is not None and iv.get("n") is not None:
        return ratio(iv["k"], iv["n"])
    return esc(f"n = {n}")


# -- sections ------------------------------------------------------------------------
def metrics_table(c: dict) -> str:
    m, iv = c["metrics"], c["intervals"]
    ch, first_ch = m["choice"]["all_decisions"], m["choice"]["first_decision"]
    comp, ex, pr, st, ex_track = m["completion"], m["execution"], m["pairs"], m["steps"], m["choice"]["explicit"]
    first = m["reach"][0]
    n = comp["n"]
    rows = [
        ["selection (first decision correct)", pct(first["correct_per_run"]), interval(iv.get("selection")),
         ratio(first["N_correct"], first["N_run"]), esc("scored rollouts (N_run)")],
        ["valid completion", pct(comp["valid"]["rate"]), interval(iv.get("valid_completion")),
         ratio(comp["valid"]["count"], n), esc("scored episodes")],
        ["physical completion", pct(comp["physically"]["rate"]), interval(iv.get("physical_completion")),
         ratio(comp["physically"]["count"], n), esc("scored episodes")],
        ["clean completion", pct(comp["clean"]["rate"]), interval(iv.get("clean_completion")),
         ratio(comp["clean"]["count"], n), esc("scored episodes")],
        ["recovered completion", pct(comp["recovered"]["rate"]), interval(iv.get("recovered_completion")),
         ratio(comp["recovered"]["count"], n), esc("scored episodes")],
        ["valid completion bounds s/N..(s+u)/N", f"{pct(comp['valid_bounds']['lower'])} .. "
         f"{pct(comp['valid_bounds']['upper'])}", _na(), esc(f"u = {comp['valid_bounds']['unresolved']}"),
         esc(f"registered episodes N = {comp['registered'] if comp['registered'] is not None else 'not given'}")],
    ]
    for r in m["reach"]:
        d = r["decision"]
        rows += [[f"reach d{d}: N_reach/N_run", pct(r["reach"]), interval(iv.get(f"reach_d{d}")),
                  ratio(r["N_reach"], r["N_run"]), esc("scored rollouts")],
                 [f"reach d{d}: N_correct/N_reach", pct(r["correct_given_reach"]),
                  interval(iv.get(f"correct_given_reach_d{d}")),
                  ratio(r["N_correct"], r["N_reach"]), esc(f"rollouts reaching decision {d}")],
                 [f"reach d{d}: N_correct/N_run", pct(r["correct_per_run"]), interval(iv.get(f"correct_per_run_d{d}")),
                  ratio(r["N_correct"], r["N_run"]), esc("scored rollouts")]]
    rows += [
        ["B_next (eq. 4), all decisions", pct(ch["B_next"]), interval(iv.get("B_next")),
         ratio(ch["correct"], ch["population"]), esc(f"native decisions in {m['choice']['episodes']} episodes")],
        ["C_id (eq. 5), all decisions", pct(ch["C_id"]), interval(iv.get("C_id")),
         ratio(ch["identified"], ch["population"]), esc("native decisions")],
        ["accuracy among identified", pct(ch["accuracy_identified"]), interval(iv.get("accuracy_identified")),
         ratio(ch["correct"], ch["identified"]),
         esc(f"identified choices (coverage C_id {100 * ch['coverage']:.1f}%)" if ch["coverage"] is not None
             else "identified choices (coverage unavailable)")],
        ["B_next, first decision only", pct(first_ch["B_next"]), interval(iv.get("B_next_first")),
         ratio(first_ch["correct"], first_ch["population"]), esc("first native decisions")],
        ["C_id, first decision only", pct(first_ch["C_id"]), interval(iv.get("C_id_first")),
         ratio(first_ch["identified"], first_ch["population"]), esc("first native decisions")],
        ["explicit reports: B_next", pct(ex_track["B_next"]), _na(),
         ratio(ex_track.get("correct"), ex_track.get("population")), esc("explicit report opportunities")],
        ["E_fixed (eq. 6)", pct(ex["E_fixed"]), interval(iv.get("E_fixed")), ratio(ex["K_confirmed"], ex["K"]),
         esc("episodes with the operation fixed for the system (K)")],
        ["execution given own correct choice", pct(ex["given_correct_choice"]),
         interval(iv.get("execution_given_correct_choice")),
         _count(iv.get("execution_given_correct_choice"), ex["n_correct_choice"]),
         esc("episodes with a correct first choice")],
        ["P_state (eq. 7)", pct(pr["P_state"]), interval(iv.get("P_state")), ratio(pr["verified_correct"], pr["N"]),
         esc(f"answer-changing pairs; unresolved {pr['unresolved']}; bounds ") + pct(pr["lower"]) + " .. "
         + pct(pr["upper"])],
        ["SR (all steps)", pct(st["SR"]), interval(iv.get("SR")), _count(iv.get("SR"), st["n"]),
         esc("scored episodes")],
        ["SSR (mean step fraction)", pct(st["SSR"]), interval(iv.get("SSR")), _count(iv.get("SSR"), st["n"]),
         esc("scored episodes")],
    ]
    rows += [[f"step: {name}", pct(v), interval(iv.get(f"step_{name}")), _count(iv.get(f"step_{name}"), st["n"]),
              esc("scored episodes, earlier steps held")]
             for name, v in st["per_step"].items()]
    return table(["metric", "estimate", "95% CI", "count / denominator", "population"],
                 [[esc(r[0])] + r[1:] for r in rows], numeric_from=1)


def coverage_table(cov: dict, partial_evidence=()) -> str:
    def listed(xs):
        return esc(", ".join(map(str, xs))) if xs else "&ndash;"
    rows = [["episode units with a result", esc(cov["units"]), "&ndash;"],
            ["registered but never attempted", esc(len(cov.get("missing", []))), listed(cov.get("missing", []))],
            ["attempted, no scored result", esc(len(cov["unresolved"])), listed(cov["unresolved"])],
            ["more than one scored result", esc(len(cov["duplicated"])), listed(cov["duplicated"])],
            ["retried (several attempts)", esc(len(cov["retried"])), listed(cov["retried"])],
            # Episodes whose bag ends before the episode did: their audit is partial at best.
            ["bag holds part of the episode (audit: partial)", esc(len(partial_evidence)),
             listed(list(partial_evidence))]]
    return table(["coverage", "count", "units"], rows, numeric_from=1)


ACCOUNTING_ROWS = (("attempts", "attempts (PASS + FAIL + ERROR)", None), ("PASS", "PASS", None),
                   ("FAIL", "FAIL", None), ("ERROR", "ERROR", None),
                   ("success_rate", "success rate (PASS / attempts)", "success_rate"),
                   ("time_total_s", "time total over all attempts (s)", None),
                   ("time_unknown", "attempts with unknown time", None),
                   ("time_per_success_s", "time per success (s)", "time_per_success_s"),
                   ("cost_total_usd", "cost total over all attempts (USD)", None),
                   ("cost_unknown", "attempts with unknown cost", None),
                   ("cost_per_success_usd", "cost per success (USD)", "cost_per_success_usd"))


def accounting_table(a: dict, iv: dict) -> str:
    rows, shown = [], set()
    for key, label, iv_key in ACCOUNTING_ROWS:
        if key not in a:
            continue
        shown.add(key)
        fmt = pct if key == "success_rate" else num
        value = fmt(a[key])
        if key == "success_rate":
            value += " " + ratio(a["PASS"], a["attempts"])
        rows.append([esc(label), value, interval(iv.get(iv_key), fmt) if iv_key else "&ndash;"])
    # Fields added to the accounting later (model calls, rejections...) still show.
    for key, value in a.items():
        if key not in shown and not isinstance(value, (dict, list)):
            rows.append([esc(key), num(value) if not isinstance(value, str) else esc(value), "&ndash;"])
    return table(["accounting (all attempts)", "value", "95% CI"], rows)


def runtime_table(rt: dict | None) -> str:
    if not rt:
        return f'<p class="muted">runtime: {UNAVAILABLE}</p>'
    labels = {"wall": "wall time of the attempt", "inference": "inference (calls into the tested system)",
              "motion": "motion (system-timed execution)", "waiting": "waiting (wall - inference - motion)"}
    rows = [[esc(label), num(rt[k]["mean_s"], " s"), esc(f"{rt[k]['n']} / {rt['attempts']}"),
             esc(rt[k]["unavailable"] or "")] for k, label in labels.items()]
    rows.append([esc("wall beyond inference (motion + waiting, not split)"), num(rt["not_inference"]["mean_s"], " s"),
                 esc(f"{rt['not_inference']['n']} / {rt['attempts']}"), ""])
    out = table(["runtime part", "mean per attempt", "attempts recording it", "why unavailable"], rows)
    req = rt.get("policy_requests") or {}
    if req.get("requests"):
        timed = [("round trip (evaluator)", req["round_trip_s"])]
        timed += [(f"server's {key}", s) for key, s in req["server_timing"].items() if s]
        out += table([f"policy server requests ({req['requests']})", "median", "p95", "max"],
                     [[esc(label), num(s["p50"], " s"), num(s["p95"], " s"), num(s["max"], " s")]
                      for label, s in timed])
    return out


def confusion_table(cm: dict) -> str:
    if not cm["rows"]:
        return f'<p class="muted">confusion: {UNAVAILABLE} (no first native decision in a scored episode)</p>'
    rows = [[esc(r)] + [esc(cm["matrix"][r].get(col, 0)) for col in cm["cols"]] for r in cm["rows"]]
    note = (f"<p class=\"muted\">most chosen standard: {esc(cm['preferred'] or UNAVAILABLE)} at "
            f"{pct(cm['preferred_share'])} of identified choices (balanced share {pct(cm['balanced_share'])})</p>")
    return table(["required \\ chosen"] + list(cm["cols"]), rows) + note


def attribution_table(att: dict | None) -> str:
    if not att:
        return ""
    return table(["failure attribution (first break-down)", "attempts"],
                 [[esc(k), esc(v)] for k, v in att.items()])


def family_table(lines: dict | None) -> str:
    """The task family's own lines (TaskFamily.report_lines), as the text report shows them."""
    if not lines:
        return ""
    return table(["task family", ""], [[esc(label), esc(text)] for label, text in lines.items()])


def coordination_table(co: dict | None) -> str:
    """A hidden-event condition's metrics over the episodes that reached the event (report.py)."""
    if not co:
        return ""
    r = co["response"]
    rows = [[esc("episodes reaching the event"), esc(f"{co['reached']} / {co['episodes']}"), "&ndash;"],
            [esc("premature violation rate (PVR)"), ratio(co["premature_violation"]["k"], co["premature_violation"]["n"]),
             interval(co["premature_violation"])],
            [esc("premature interactions (contact onsets)"), num(co["premature_interactions"]), "&ndash;"],
            [esc(f"response latency, event to first identified choice (n={r['n']})"),
             f"median {num(r['median_latency_s'], ' s')}, mean {num(r['mean_latency_s'], ' s')}", "&ndash;"],
            [esc("completion"), ratio(co["completion"]["k"], co["completion"]["n"]), interval(co["completion"])]]
    return table(["hidden event (coordination)", "value", "95% CI"], rows)


def cell_section(i: int, c: dict, images: dict) -> str:
    name = cell_name(c["cell"])
    parts = [f'<h2 id="cell-{i}">{esc(name)}</h2>',
             f'<p class="muted">run directories: {esc(", ".join(c.get("output_dirs", [])))}</p>',
             "<h3>Coverage</h3>", coverage_table(c["coverage"], c.get("partial_evidence") or ()),
             "<h3>Metrics and populations</h3>", metrics_table(c), coordination_table(c.get("coordination")),
             family_table(c.get("family")),
             "<h3>Accounting</h3>", accounting_table(c["accounting"], c["intervals"]),
             "<h3>Runtime</h3>", runtime_table(c.get("runtime")),
             "<h3>Confusion (required vs chosen standard)</h3>", confusion_table(c["metrics"]["confusion"])]
    if f"confusion_{i}.png" in images:
        parts.append(image(images[f"confusion_{i}.png"], f"confusion matrix, {name}"))
    parts.append(attribution_table(c.get("attribution")))
    return "\n".join(parts)


VERDICT_CLASS = {"pass": "pass", "fail": "fail", "undefined": "undefined"}
CRITERIA = (("cost_per_success_ratio", "cost-per-success ratio", "upper bound < 1", num),
            ("time_per_success_ratio", "time-per-success ratio", "upper bound < 1", num),
            ("success_difference", "success difference (candidate - reference)", None, pct))


def comparison_section(c: dict) -> str:
    verdict = c["verdict"]
    margin = f"lower bound > -{c['success_margin_pp']:g} pp"
    rows = []
    for key, label, rule, fmt in CRITERIA:
        iv = c["metrics"].get(key) or {}
        why = iv.get("reason") or ""
        rows.append([esc(label), fmt(iv.get("estimate")), interval(iv, fmt), esc(rule or margin), esc(why)])
    totals = [[esc(arm), esc(t["attempts"]), esc(t["successes"]),
               _na() if t["time_unknown"] else num(t["time"], " s"),
               _na() if t["cost_unknown"] else num(t["cost"], " USD")] for arm, t in c["totals"].items()]
    reasons = "".join(f"<li>{esc(r)}</li>" for r in c["reasons"])
    return "\n".join([
        f"<h3>{esc(cell_name(c['candidate']))} vs {esc(cell_name(c['reference']))}</h3>",
        f'<p>verdict: <span class="{VERDICT_CLASS.get(verdict, "undefined")}">{esc(verdict.upper())}</span></p>',
        f"<ul>{reasons}</ul>" if reasons else "",
        f'<p class="muted">{esc(c["paired_units"])} paired task units in {esc(c["families"])} resampled blocks '
        f'(task families); unpaired: candidate {esc(len(c["unpaired_units"]["candidate"]))}, reference '
        f'{esc(len(c["unpaired_units"]["reference"]))}; {esc(c["draws"])} draws, seed {esc(c["seed"])}, '
        f'{esc(c["ci"])}.</p>',
        table(["metric", "estimate", "95% CI", "criterion", "undefined because"], rows),
        table(["arm", "attempts", "successes", "time total", "cost total"], totals),
        paired_section(c.get("paired"))])


def sequential_section(c: dict) -> str:
    """A pre-registered sequential comparison, re-derived from the records (reporting/design.py)."""
    s = c["sequential"]
    rows = [["decision", esc(s["status"])], ["why", esc(s["reason"])],
            ["units read (locked order)", esc(f"{s['pairs']} of at most {s['max_pairs']} (last {s['last_unit']})")],
            ["only candidate right / only reference right / both", esc(f"{s['candidate_only']} / "
                                                                          f"{s['reference_only']} / {s['both']}")],
            ["e-value / threshold 1/alpha", esc(f"{s['e_value']:.4g} / {s['threshold']:.4g}")],
            ["test", esc(f"{s['test']}, alpha {s['alpha']:g}, prior Beta({s['prior']:g}, {s['prior']:g})")]]
    return "\n".join([f"<h3>{esc(cell_name(c['candidate']))} vs {esc(cell_name(c['reference']))} "
                      "(pre-registered sequential test)</h3>",
                      '<p class="muted">The campaign stopped on its results, so no fixed-N interval or test is '
                      "shown for this comparison.</p>", table(["", "value"], rows)])


def _signed_pp(x) -> str:
    return _na() if x is None else esc(f"{100 * x:+.1f} pp")


def paired_section(p: dict | None) -> str:
    """The paired comparison of the two cells' rates (reporting/paired_comparison.py)."""
    if not p:
        return ""
    from .paired_comparison import TEST_NAMES

    rows = []
    for name, m in p["metrics"].items():
        if not m["n"]:
            rows.append([esc(name), _na(), _na(), _na(), _na(), esc(p["population"].get(name, ""))])
            continue
        rows.append([esc(name), ratio(m["candidate_k"], m["n"]), ratio(m["reference_k"], m["n"]),
                     f"{_signed_pp(m['estimate'])} [{_signed_pp(m['lo'])}, {_signed_pp(m['hi'])}]",
                     esc(f"{TEST_NAMES.get(m['test'], m['test'])}: p = {m['p_value']:.3g}"),
                     esc(p["population"].get(name, ""))])
    return "\n".join([
        f'<h4>Paired comparison</h4><p class="muted">{esc(p["units"])} units in {esc(p["clusters"])} '
        f'{esc(p["level"])} clusters, {esc(p["scored_in_both"])} scored in both arms. Difference candidate - '
        "reference with its 95% interval (Bonett-Price, counts divided by the design effect where clusters hold "
        "several units) and the exact test of no difference.</p>",
        table(["rate", "candidate k / N", "reference k / N", "difference [95% CI]", "exact test", "population"],
              rows)])


def oracle_section(g: dict) -> str:
    pop = g.get("population") or []
    verified = sum(1 for p in pop if p.get("status") == "verified")
    rows = []
    for name, r in g["table"].items():
        if r.get("compatibility") != "compatible":
            rows.append([esc(name), esc(r.get("N")), esc(r.get("compatibility"))] + ["&ndash;"] * 7)
        elif name == "base":
            rows.append([esc(name), esc(r.get("N")), esc("compatible"),
                         esc("mean ") + num(r.get("mean_choice_correct")), "&ndash;",
                         esc("mean ") + num(r.get("mean_completed")), "&ndash;", "&ndash;", "&ndash;", "&ndash;"])
        else:
            bounds = r.get("completed_bounds") or [None, None]
            rows.append([esc(name), esc(r.get("N")), esc("compatible"),
                         ratio(r.get("choice_correct_supported"), r.get("choice_correct_base")),
                         num(r.get("gain_choice_correct")),
                         ratio(r.get("completed_supported"), r.get("completed_base")),
                         num(r.get("gain_completed")), f"{pct(bounds[0])} .. {pct(bounds[1])}",
                         ratio(r.get("delivered"), r.get("interventions")) + " (" + pct(r.get("delivery_rate")) + ")",
                         pct(r.get("agreement_rate"))])
    inter = "".join(f"<li>{esc(name)}: " + ", ".join(f"{esc(k)} {num(v)}" for k, v in c.items()) + "</li>"
                    for name, c in (g.get("interactions") or {}).items())
    return "\n".join([
        f"<h3>{esc(g.get('system'))} ({esc(g.get('design'))})</h3>",
        f'<p class="muted">{esc(verified)} / {esc(len(pop))} checkpoints verified; {esc(g.get("path", ""))}</p>',
        table(["condition", "N", "compatibility", "choice supported / base", "gain choice (eq. 3)",
               "done supported / base", "gain done (eq. 3)", "done bounds", "delivered / interventions",
               "agreement"], rows, numeric_from=3),
        interface_errors_table((g["table"].get("base") or {}).get("interface_errors")),
        f"<p>joint-support interactions:</p><ul>{inter}</ul>" if inter else ""])


def interface_errors_table(e: dict | None) -> str:
    """The base system's interface errors measured at the checkpoints (oracle/diagnose.py
    interface_errors): state readout error and the geometry errors of eq. 2."""
    if e is None:
        return ""
    invalid, reports = e.get("geometry_invalid"), e.get("geometry_reports")
    rows = [["state readout |error|, mean", num(e.get("readout_abs_error_g_mean"), " g"),
             esc("base branches with a state readout")],
            ["geometry e_p (eq. 2), mean", num(e.get("geometry_e_p_m_mean"), " m"),
             esc("valid geometry reports")],
            ["geometry e_v (eq. 2), mean", num(e.get("geometry_e_v_rad_mean"), " rad"),
             esc("valid geometry reports")],
            ["geometry reports invalid / all", ratio(invalid, reports),
             esc("invalid: zero or non-finite, counted apart")]]
    return table(["base system interface error at the checkpoints", "value", "over"],
                 [[esc(r[0])] + r[1:] for r in rows], numeric_from=1)


def bindings_section(g: dict) -> str:
    """One group of cells that differ in their object binding (reporting/bindings.py): a
    row per binding, each rate as estimate, k / N and 95% interval."""
    from .bindings import RATES

    def rate(iv: dict | None) -> str:
        if not iv or iv.get("n") is None:
            return _na()
        return f"{pct(iv.get('estimate'))} {_count(iv, iv['n'])} {interval(iv)}"
    rows = [[esc(r["binding"]), esc(r["condition"]), esc(r["units"])] + [rate(r["intervals"].get(k)) for _, k in RATES]
            for r in g["rows"]]
    return "\n".join([f"<h2>Object bindings side by side: task={esc(g['task'])} / {esc(cell_name(g['shared']))}</h2>",
                      table(["binding", "condition", "units", *(label for label, _ in RATES)], rows, numeric_from=2)])


def render(rep: dict, images: dict[str, bytes], plots_skipped: bool = False) -> str:
    """The whole page as text."""
    b = rep["bootstrap"]
    cells, comps, gains = rep["cells"], rep.get("comparisons") or [], rep.get("oracle_gains") or []
    toc = "".join(f'<li><a href="#cell-{i}">{esc(cell_name(c["cell"]))}</a></li>' for i, c in enumerate(cells))
    body = ["<h1>Labference report</h1>",
            f'<p class="muted">labference {esc(__version__)}; {esc(len(cells))} cell(s) from '
            f'{esc(", ".join(rep.get("roots", [])))}. 95% intervals of rates: Wilson where every cluster is one '
            f'outcome, else Wilson on the design-effect-adjusted effective n (clusters of {esc(b["level"])}s; '
            f'docs/reporting.md); of time and cost per success: cluster bootstrap over {esc(b["level"])}s, '
            f'{esc(b["draws"])} draws, seed {esc(b["seed"])}, {esc(b["ci"])}. "{UNAVAILABLE}" = zero denominator, '
            f"unknown usage or not recorded; never 0.</p>",
            f"<ul>{toc}</ul>" if toc else "<p>No cells: no episode records found.</p>",
            "<h2>Selection vs completion</h2>"]
    if plots_skipped:
        body.append('<p class="muted">plots skipped (--no-plots).</p>')
    else:
        body.append(image(images.get("selection_completion.png"), "selection vs valid completion, 95% CI"))
    body.append("<h2>Runtime: inference / motion / waiting</h2>")
    if not plots_skipped:
        body.append(image(images.get("runtime.png"), "runtime split per attempt"))
    body.append(table(["cell", "wall", "inference", "motion", "waiting", "not split (wall - inference)"],
                      [[esc(cell_name(c["cell"]))] + [num(((c.get("runtime") or {}).get(k) or {}).get("mean_s"), " s")
                                                       for k in ("wall", "inference", "motion", "waiting",
                                                                 "not_inference")] for c in cells]))
    body += [bindings_section(g) for g in rep.get("bindings") or []]
    fixed = [c for c in comps if c.get("design") != "sequential"]
    sequential = [c for c in comps if c.get("design") == "sequential"]
    if fixed:
        body.append("<h2>Relative rule (control protocol)</h2>")
        body.append('<p class="muted">Passes only if the upper 95% bound of the cost-per-success ratio and of the '
                    "time-per-success ratio are below 1 and the lower bound of the success difference is above -3 "
                    "percentage points, with every bootstrap draw defined. An efficiency / non-inferiority rule, "
                    "not proof of higher success.</p>")
        body += [comparison_section(c) for c in fixed]
    if sequential:
        body.append("<h2>Sequential comparisons (pre-registered)</h2>")
        body += [sequential_section(c) for c in sequential]
    body += [cell_section(i, c, {} if plots_skipped else images) for i, c in enumerate(cells)]
    if gains:
        body.append("<h2>Oracle gain tables (matched checkpoint continuations)</h2>")
        body += [oracle_section(g) for g in gains]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<link rel=\"icon\" href=\"data:,\">"
            f"<title>Labference report</title><style>{CSS}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")
