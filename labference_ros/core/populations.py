"""Paper section 7 metrics over whole episodes, each with its population named.

An episode is a plain dict {"run": run.json, "scores": scores.json or None}
(docs/records.md). Only *scored* episodes (scores.json with status "final")
enter the choice, execution and completion populations; every other episode
keeps its identity as unresolved and shows up in coverage and bounds, never
as a 0. A rate whose denominator is zero is None ("unavailable").
"""
from __future__ import annotations

from collections import Counter

from .metrics import choice_rates, p_state as pair_rates, rate, reach_rates

FINAL = "final"



def is_scored(ep: dict) -> bool:
    s = ep.get("scores")
    return bool(s) and s.get("status") == FINAL and not ep.get("error")


def scored(episodes) -> list[dict]:
    return [e for e in episodes if is_scored(e)]


def native_decisions(scores: dict) -> list[dict]:
    """Native-track opportunities in order: a physical operation was legal and
    the opportunity closed or got a choice (the same population as scores.native)."""
    recs = sorted(scores.get("opportunity_records") or [], key=lambda o: o.get("opportunity_id", 0))
    return [o for o in recs if o.get("native_scorable")
            and (o.get("status") == "closed" or o.get("first_choice") is not None)]


def _instance(ep: dict) -> dict:
    return (ep.get("run") or {}).get("instance") or {}


# -- choice: B_next, C_id, accuracy among identified (eqs. 4-5) -------------------------
def choice(episodes) -> dict:
    """Two populations: every native decision of every scored rollout (policy-reached
    states, with episode and opportunity counts), and the first decision only."""
    eps = scored(episodes)
    all_items, first_items = [], []
    for e in eps:
        dec = native_decisions(e["scores"])
        all_items += [(d.get("first_choice"), d.get("legal_set") or []) for d in dec]
        if dec:
            first_items.append((dec[0].get("first_choice"), dec[0].get("legal_set") or []))
    explicit = Counter()
    for e in eps:
        x = e["scores"].get("explicit") or {}
        for k in ("population", "identified", "correct"):
            explicit[k] += int(x.get(k) or 0)
    b, c = rate(explicit["correct"], explicit["population"]), rate(explicit["identified"], explicit["population"])
    return {
        "episodes": len(eps),
        "all_decisions": choice_rates(all_items),
        "first_decision": choice_rates(first_items),
        "explicit": {**explicit, "B_next": b, "C_id": c,
                     "accuracy_identified": None if not c else b / c, "coverage": c},
    }


# -- reach (7.1): N_reach/N_run, N_correct/N_reach, N_correct/N_run --------------------
def reach(episodes, decision: int = 1) -> dict:
    """`decision` is the ordinal of the native decision in the rollout (1 = first).
    N_run: scored rollouts; N_reach: those with a delivered k-th decision."""
    eps = scored(episodes)
    n_reach = n_correct = n_ident = 0
    for e in eps:
        dec = native_decisions(e["scores"])
        if len(dec) >= decision:
            d = dec[decision - 1]
            n_reach += 1
            n_ident += d.get("first_choice") is not None
            n_correct += d.get("choice_correct") is True
    return {"decision": decision, **reach_rates(len(eps), n_reach, n_correct, n_ident)}


def max_decisions(episodes) -> int:
    return max((len(native_decisions(e["scores"])) for e in scored(episodes)), default=0)


# -- execution (7.2): E_fixed over a common population K, and on-policy ----------------
def fixed_subgoal(ep: dict) -> bool:
    """Common population K: the operation was fixed for the system (declared by the run,
    or an Oracle that replaces the decision / supplies the skill)."""
    run = ep.get("run") or {}
    if run.get("execution_population") == "fixed":
        return True
    iv = run.get("intervention") or {}
    # A joint condition names its supports "mode:site+mode:site"; older runs only mode and site.
    cond = iv.get("condition") or f"{iv.get('mode')}:{iv.get('site')}"
    return any(part in ("replace:decision", "replace:skill") for part in str(cond).split("+"))


def execution(episodes) -> dict:
    eps = scored(episodes)
    fixed = [e for e in eps if fixed_subgoal(e)]
    k_conf = sum(1 for e in fixed if e["scores"].get("executed") is True)
    own = [e for e in eps if e["scores"].get("first_choice_correct") is True]
    ident = [e for e in eps if e["scores"].get("executed") is not None
             or e["scores"].get("first_choice_correct") is not None]
    ex = lambda pop: sum(1 for e in pop if e["scores"].get("executed") is True)  # noqa: E731
    return {
        "E_fixed": rate(k_conf, len(fixed)), "K": len(fixed), "K_confirmed": k_conf,
        "given_correct_choice": rate(ex(own), len(own)), "n_correct_choice": len(own),
        "executed_given_correct_choice": ex(own),
        "given_identified_choice": rate(ex(ident), len(ident)), "n_identified_choice": len(ident),
    }


# -- completion (7.2) ----------------------------------------------------------------
COMPLETION_KINDS = ("physically_complete", "valid_complete", "clean_complete", "recovered_complete")


def completion(episodes, registered: int | None = None) -> dict:
    """Rates over scored episodes; with `registered` (the planned count N), valid
    completion also gets the provisional bounds s/N and (s+u)/N of paper 7.4,
    u = registered episodes without a scored result."""
    episodes = list(episodes)
    eps = scored(episodes)
    n = len(eps)
    out = {"n": n, "registered": registered}
    for kind in COMPLETION_KINDS:
        k = sum(1 for e in eps if e["scores"].get(kind) is True)
        out[kind.replace("_complete", "")] = {"count": k, "rate": rate(k, n)}
    out["classes"] = dict(Counter(e["scores"].get("completion_class", "none") for e in eps))
    big_n = registered if registered is not None else len(list(episodes))
    s = out["valid"]["count"]
    u = max(big_n - n, 0)
    out["coverage"] = rate(n, big_n)
    out["valid_bounds"] = {"lower": rate(s, big_n), "upper": rate(s + u, big_n), "unresolved": u}
    return out


# -- answer-changing pairs (eq. 7) ---------------------------------------------------
def _member_correct(ep: dict | None):
    if ep is None or not is_scored(ep):
        return None  # missing or invalid run: unresolved, not wrong
    return ep["scores"].get("first_choice_correct") is True  # no identified choice = not legal


def pairs(episodes, registered_pairs=None) -> dict:
    """P_state over the registered pairs (pair_id, role a/b); when no registry is
    given, over the pairs seen in the episodes."""
    by_pair: dict[str, dict] = {}
    for e in episodes:
        inst = _instance(e)
        pid, role = inst.get("pair_id"), inst.get("pair_role")
        if pid and role:
            slot = by_pair.setdefault(pid, {})
            # A scored member wins over an unscored attempt of the same member.
            if role not in slot or (not is_scored(slot[role]) and is_scored(e)):
                slot[role] = e
    ids = sorted(registered_pairs) if registered_pairs is not None else sorted(by_pair)
    rows = [(_member_correct(by_pair.get(p, {}).get("a")), _member_correct(by_pair.get(p, {}).get("b")))
            for p in ids]
    return pair_rates(rows)


# -- ordered steps: SR and SSR (SciHorizon eqs. 6-7) ---------------------------------
# The task contract names its chain (TaskContract.evaluation_steps, recorded in
# run.json as task.evaluation_steps) and the task family gives each name its test
# on scores.json (TaskFamily.evaluation_chain): a chain is ((name, predicate), ...).
def recorded_steps(ep: dict) -> tuple[str, ...]:
    """The step chain an episode's run.json names; empty for runs recorded before it did."""
    return tuple((ep.get("run") or {}).get("task", {}).get("evaluation_steps") or ())


def step_chain(scores: dict, chain) -> list[bool]:
    """z_i: step i held and every earlier step held."""
    z, ok = [], True
    for _name, holds in chain:
        ok = ok and bool(holds(scores))
        z.append(ok)
    return z


def steps(episodes, chain) -> dict:
    """SR and SSR over scored episodes for the task's step chain (no chain: unavailable)."""
    chain = tuple(chain)
    eps = scored(episodes)
    m = len(chain)
    chains = [step_chain(e["scores"], chain) for e in eps] if m else []
    sr = rate(sum(1 for z in chains if z[-1]), len(chains))
    ssr = rate(sum(sum(z) / m for z in chains), len(chains))
    per_step = {name: rate(sum(1 for z in chains if z[i]), len(chains)) for i, (name, _) in enumerate(chain)}
    return {"n": len(chains), "steps": [name for name, _ in chain], "SR": sr, "SSR": ssr, "per_step": per_step}


# -- per-standard confusion at the first decision ------------------------------------
def op_label(op: dict | None) -> str:
    if not op:
        return "none"
    obj, kind = op.get("object", ""), op.get("type", "")
    return obj if kind == "add" else f"{kind}:{obj}" if obj else kind


def confusion(episodes) -> dict:
    """Required (legal set at the first native decision) x chosen (first choice).
    A system that picks one standard whatever is required shows one dominant column."""
    matrix: dict[str, Counter] = {}
    chosen_counts = Counter()
    for e in scored(episodes):
        dec = native_decisions(e["scores"])
        if not dec:
            continue
        required = "|".join(sorted(op_label(o) for o in dec[0].get("legal_set") or []))
        chosen = op_label(dec[0].get("first_choice"))
        matrix.setdefault(required, Counter())[chosen] += 1
        if chosen != "none":
            chosen_counts[chosen] += 1
    identified = sum(chosen_counts.values())
    top, top_n = (chosen_counts.most_common(1)[0] if chosen_counts else (None, 0))
    n_required = len(matrix)
    return {
        "rows": sorted(matrix), "cols": sorted({c for r in matrix.values() for c in r}),
        "matrix": {r: dict(sorted(c.items())) for r, c in sorted(matrix.items())},
        "chosen_share": {k: rate(v, identified) for k, v in sorted(chosen_counts.items())},
        # Share of identified choices going to the most chosen standard, against the
        # share expected if choices followed a balanced required answer (1 / #answers).
        "preferred": top, "preferred_share": rate(top_n, identified),
        "balanced_share": rate(1, n_required),
    }


# -- response latency: delivery of the triggering evidence to the first choice --------
def response_latency_s(decision: dict) -> float | None:
    """Sim seconds from the delivery that opened the opportunity (``delivery_time``)
    to its first identifiable choice (``first_choice_t``), both recorded in the
    opportunity record; None without an identified choice."""
    if decision.get("first_choice") is None:
        return None
    t0, t1 = decision.get("delivery_time"), decision.get("first_choice_t")
    if t0 is None or t1 is None:
        return None
    return round(float(t1) - float(t0), 9)


def latency(episodes, wall_latencies=None) -> dict:
    """Per-opportunity response latency over native decisions with an identified
    choice (all decisions, and the first decision of each episode), in sim time
    and, when ``wall_latencies(episode, decisions) -> [seconds | None]`` is given
    (the report reads the policy bridge's wall-clock stamps), in wall time."""
    every, first, wall_every, wall_first = [], [], [], []
    for e in scored(episodes):
        decisions = native_decisions(e["scores"])
        values = [response_latency_s(d) for d in decisions]
        every += [v for v in values if v is not None]
        if values and values[0] is not None:
            first.append(values[0])
        if wall_latencies is not None:
            walls = wall_latencies(e, decisions)
            wall_every += [w for v, w in zip(values, walls) if v is not None and w is not None]
            if walls and values and values[0] is not None and walls[0] is not None:
                wall_first.append(walls[0])
    out = {"clock": "sim", "all_decisions": _spread(every), "first_decision": _spread(first)}
    if wall_latencies is not None:
        out["wall"] = {"all_decisions": _spread(wall_every), "first_decision": _spread(wall_first)}
    return out


def _spread(values: list[float]) -> dict:
    values = sorted(values)
    n = len(values)
    if not n:
        return {"n": 0, "mean_s": None, "median_s": None, "max_s": None}
    middle = values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2
    return {"n": n, "mean_s": sum(values) / n, "median_s": middle, "max_s": values[-1]}


def all_metrics(episodes, registered: int | None = None, registered_pairs=None, chain=(),
                wall_latencies=None) -> dict:
    """chain: the task's SR/SSR steps, ((name, predicate), ...) (TaskFamily.evaluation_chain);
    wall_latencies: see latency()."""
    episodes = list(episodes)
    k = max(max_decisions(episodes), 1)
    return {
        "choice": choice(episodes),
        "reach": [reach(episodes, d) for d in range(1, k + 1)],
        "execution": execution(episodes),
        "completion": completion(episodes, registered),
        "pairs": pairs(episodes, registered_pairs),
        "steps": steps(episodes, chain),
        "latency": latency(episodes, wall_latencies),
        "confusion": confusion(episodes),
    }
