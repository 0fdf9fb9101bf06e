"""Fixed checkpoint populations J and K, and matched gains over them (paper 6.4, 7.1, 7.2, 7.4).

Pure: plain dicts in, plain (JSON-safe) dicts out; no ROS, no simulator.

One *record* per (checkpoint, branch). Fields:

  checkpoint_id       str: the registered start
  cluster             str: resampling unit (task family / instance group); pairs of one
                      cluster are always drawn together. Default: checkpoint_id.
  condition           "base" or a support condition name ("assist:state", "a+b", ...)
  status              "ok" | "unresolved" | "incompatible:..." (BranchResult.status)
  verified            bool: the checkpoint passed preparation (handoff verification)
  evidence_delivered  bool | None: the first opportunity after the handoff was delivered
  native_scorable     bool | None: a physical operation is legal at that opportunity
  first_choice        operation dict | None: b_i, first recognizable choice; None = ⊥
  legal_set           list of operation dicts | None: U_i; None = not recorded
  choice_correct      bool | None: 1[b_i in U_i] when only this, not U_i, was recorded
  fixed_subgoal       bool: a start registered for the fixed-subgoal population (every
                      branch gets the correct operation and reference geometry supplied)
  subgoal_supplied    bool | None: the correct operation and geometric references were
                      supplied (at a fixed-subgoal start: both were delivered)
  subgoal_confirmed   bool | None: the physical subgoal was confirmed
  completed           bool | None: physical completion

Memberships are properties of the checkpoint, not of a branch: J and K are read
from the base record (and the checkpoint's verification) and are the same for
every condition.
  J = verified, evidence-delivered, native-scorable checkpoints        (eqs. 4-5)
  K = verified checkpoints with the correct subgoal and geometry supplied (eq. 6)
A fixed-subgoal start is never in J (its choice was supplied): it is in K when
the subgoal was supplied, else listed under `subgoal_not_supplied`.
A membership field that is None (not recorded) keeps the checkpoint out of J/K
and lists it under `membership_unknown` in the validity report: an unknown is
never guessed.

  B_next = #{i in J: b_i in U_i} / |J|,  C_id = #{i in J: b_i != ⊥} / |J|,
  accuracy among identified = B_next / C_id,  E_fixed = #{i in K: confirmed} / |K|,
  Delta(Y) = mean over the N pairs of (Y_supported - Y_base), reversed for error
  metrics (higher_is_better False) so that positive always means improvement.

A pair (or a branch member) is unresolved when its status is not "ok" or the
metric's value is missing. While any of the N is unresolved, no rate and no gain
is given, only the bounds s/N and (s+u)/N (s = resolved members with Y = 1,
u = unresolved members). Rates with a zero denominator are None.

Intervals: 95 % percentile cluster bootstrap of the gain (reporting/bootstrap.py:
2,000 draws, seed 240926), whole clusters resampled, both branches of a pair
always drawn together because a pair is one unit.
"""
from __future__ import annotations

from labference_ros.core import proportions
from labference_ros.core.metrics import gain, rate
from labference_ros.core.paired import paired_difference

from .bootstrap import DRAWS, SEED, Resampler

BASE = "base"
OK = "ok"

# name -> (population, higher_is_better). Populations: "J", "K", or "registered"
# (every registered checkpoint, as in oracle/gains.py: a preparation failure stays
# an unresolved pair there).
METRICS = {
    "choice_correct": ("J", True),
    "identified": ("J", True),
    "wrong_choice": ("J", False),  # an identified choice outside U_i: an error metric
    "subgoal_confirmed": ("K", True),
    "completed": ("registered", True),
}


def _op_key(op: dict) -> tuple:
    return tuple(sorted(op.items()))


def is_correct(record: dict) -> bool | None:
    """1[b_i in U_i]; ⊥ is never in U_i. None when neither U_i nor the verdict was recorded."""
    choice = record.get("first_choice")
    legal = record.get("legal_set")
    if legal is not None:
        return choice is not None and _op_key(choice) in {_op_key(op) for op in legal}
    verdict = record.get("choice_correct")
    if verdict is None:
        return None
    return choice is not None and bool(verdict)


def metric_value(record: dict | None, name: str) -> float | None:
    """Y of one branch member; None = unresolved (no record, a fault, or no value)."""
    if record is None or record.get("status") != OK:
        return None
    if name == "identified":
        return float(record.get("first_choice") is not None)
    if name in ("choice_correct", "wrong_choice"):
        correct = is_correct(record)
        if correct is None:
            return None
        if name == "choice_correct":
            return float(correct)
        return float(record.get("first_choice") is not None and not correct)
    value = record.get(name)
    return None if value is None else float(value)


# -- memberships -------------------------------------------------------------------
def _by_checkpoint(records) -> dict[str, dict[str, dict]]:
    """checkpoint_id -> condition -> record, in first-seen checkpoint order."""
    table: dict[str, dict[str, dict]] = {}
    for r in records:
        table.setdefault(r["checkpoint_id"], {})[r["condition"]] = r
    return table


def _membership_source(branches: dict[str, dict]) -> dict:
    """The base record fixes membership; without one, any record of the checkpoint
    still tells whether it was verified (the other fields stay unknown)."""
    if BASE in branches:
        return branches[BASE]
    any_record = next(iter(branches.values()))
    return {"verified": any_record.get("verified")}


def memberships(records) -> dict:
    """J, K (checkpoint ids) and the validity report of every registered checkpoint."""
    table = _by_checkpoint(records)
    j_ids, k_ids = [], []
    validity = {"registered": len(table), "verified": 0, "preparation_failed": [],
                "not_evidence_delivered": [], "not_native_scorable": [], "membership_unknown": [],
                "no_base_record": [], "fixed_subgoal": [], "subgoal_not_supplied": []}
    for cid, branches in table.items():
        if BASE not in branches:
            validity["no_base_record"].append(cid)
        source = _membership_source(branches)
        if source.get("verified") is not True:
            validity["preparation_failed"].append(cid)
            continue
        validity["verified"] += 1
        if source.get("fixed_subgoal"):
            # A fixed-subgoal start measures execution (K); its choice was supplied, so never J.
            validity["fixed_subgoal"].append(cid)
            if source.get("subgoal_supplied") is True:
                k_ids.append(cid)
            else:
                validity["subgoal_not_supplied"].append(cid)
            continue
        delivered = source.get("evidence_delivered")
        scorable = source.get("native_scorable")
        if delivered is None or scorable is None:
            validity["membership_unknown"].append(cid)
        elif not delivered:
            validity["not_evidence_delivered"].append(cid)
        elif not scorable:
            validity["not_native_scorable"].append(cid)
        else:
            j_ids.append(cid)
        if source.get("subgoal_supplied") is True:
            k_ids.append(cid)
    validity["J"] = len(j_ids)
    validity["K"] = len(k_ids)
    validity["verification_rate"] = rate(validity["verified"], validity["registered"])
    # Full-population comparisons need every registered start prepared and classified.
    validity["full_population"] = not (validity["preparation_failed"] or validity["membership_unknown"]
                                       or validity["no_base_record"])
    return {"J": j_ids, "K": k_ids, "registered": list(table), "validity": validity}


# -- rates of one condition over a fixed population -----------------------------------
def bounded_rate(values: list[float | None], clusters: list[str] | None = None) -> dict:
    """Rate of Y over a fixed population; with u unresolved members only s/N, (s+u)/N.
    With the members' clusters, a resolved rate also gets its 95 % interval: Wilson over
    one-member clusters, else Wilson on the design-effect-adjusted n (core/proportions.py)."""
    n = len(values)
    unresolved = sum(1 for v in values if v is None)
    successes = sum(1 for v in values if v is not None and v == 1.0)
    out = {"N": n, "count": successes, "unresolved": unresolved,
           "rate": rate(successes, n) if unresolved == 0 else None,
           "bounds": [rate(successes, n), rate(successes + unresolved, n)]}
    if clusters is not None and unresolved == 0 and n:
        sums: dict[str, list[float]] = {}
        for v, c in zip(values, clusters):
            sums.setdefault(c, [0.0, 0.0])
            sums[c][0] += v == 1.0
            sums[c][1] += 1.0
        r = proportions.clustered_wilson([k for k, _ in sums.values()], [m for _, m in sums.values()])
        out["interval"] = {"method": proportions.WILSON if len(sums) == n else proportions.WILSON_DEFF,
                           "lo": r.lo, "hi": r.hi, "n_clusters": len(sums), "effective_n": r.effective_n}
    return out


def condition_rates(table: dict, j_ids: list, k_ids: list, condition: str, clusters: dict | None = None) -> dict:
    """B_next, C_id, accuracy among identified over J and E_fixed over K for one condition
    (with clusters: checkpoint -> cluster, each resolved rate with its interval)."""
    records = [table[cid].get(condition) for cid in j_ids]
    j_clusters = None if clusters is None else [clusters.get(cid, cid) for cid in j_ids]
    k_clusters = None if clusters is None else [clusters.get(cid, cid) for cid in k_ids]
    correct = bounded_rate([metric_value(r, "choice_correct") for r in records], j_clusters)
    identified = bounded_rate([metric_value(r, "identified") for r in records], j_clusters)
    resolved = correct["unresolved"] == 0 and identified["unresolved"] == 0
    out = {"J": len(j_ids), "K": len(k_ids), "B_next": correct, "C_id": identified,
           # B_next / C_id, reported with its coverage C_id; None while members are unresolved.
           "accuracy_identified": rate(correct["count"], identified["count"]) if resolved else None}
    out["E_fixed"] = bounded_rate([metric_value(table[cid].get(condition), "subgoal_confirmed") for cid in k_ids],
                                  k_clusters)
    return out


# -- gains (eq. 3) -------------------------------------------------------------------
def _population_ids(name: str, member: dict) -> list:
    population, _ = METRICS[name]
    return member["registered"] if population == "registered" else member[population]


def metric_gain(table: dict, ids: list, clusters: dict, condition: str, name: str,
                draws: int = DRAWS, seed: int = SEED) -> dict:
    population, higher_is_better = METRICS[name]
    pairs = [(metric_value(table[cid].get(condition), name), metric_value(table[cid].get(BASE), name))
             for cid in ids]
    supported = bounded_rate([s for s, _ in pairs])
    base = bounded_rate([b for _, b in pairs])
    unresolved_pairs = sum(1 for s, b in pairs if s is None or b is None)
    out = {"population": population, "N": len(pairs), "higher_is_better": higher_is_better,
           "unresolved": unresolved_pairs, "supported": supported, "base": base,
           "gain": None, "interval": None}
    if unresolved_pairs or not pairs:
        return out  # bounds only until every registered pair has valid outcomes
    out["gain"] = gain(pairs, higher_is_better)
    sign = 1.0 if higher_is_better else -1.0
    # One resampling unit per pair (both branches together), linked by its cluster.
    units = [{"unit": cid, "diff": sign * (s - b), "run": {"instance": {"family": clusters[cid]}}}
             for cid, (s, b) in zip(ids, pairs)]
    resampler = Resampler(units, level="family", draws=draws, seed=seed)
    interval = resampler.interval(lambda group: (sum(u["diff"] for u in group), len(group)))
    out["interval"] = {k: interval[k] for k in ("lo", "hi", "n_clusters", "draws", "seed", "undefined_draws")}
    # The same gain as a paired difference (core/paired.py): an interval that does not collapse
    # when every pair agrees, and an exact test of no gain; errors reversed as above.
    grouped: dict[str, list[tuple[int, int]]] = {}
    for cid, (sup, bas) in zip(ids, pairs):
        better, worse = (sup, bas) if higher_is_better else (bas, sup)
        grouped.setdefault(clusters[cid], []).append((int(better == 1.0), int(worse == 1.0)))
    paired = paired_difference(list(grouped.values()))
    out["paired_interval"] = {k: paired[k] for k in ("lo", "hi", "method", "test", "p_value", "n_clusters")}
    return out


def _compatibility(table: dict, condition: str) -> str:
    statuses = sorted({r[condition]["status"] for r in table.values()
                       if condition in r and r[condition]["status"].startswith("incompatible")})
    return statuses[0] if statuses else "compatible"


def population_metrics(records, draws: int = DRAWS, seed: int = SEED) -> dict:
    """Memberships, validity, per-condition rates over J/K and per-support gains."""
    records = list(records)
    table = _by_checkpoint(records)
    member = memberships(records)
    clusters = {}
    for r in records:
        clusters.setdefault(r["checkpoint_id"], str(r.get("cluster") or r["checkpoint_id"]))
    conditions = [BASE] + sorted({r["condition"] for r in records} - {BASE})
    out = {"J": member["J"], "K": member["K"], "validity": member["validity"],
           "conditions": {}, "gains": {}}
    for condition in conditions:
        compatibility = _compatibility(table, condition)
        if compatibility != "compatible":
            out["conditions"][condition] = {"compatibility": compatibility}
            out["gains"][condition] = {"compatibility": compatibility}
            continue  # an incompatible support is never pooled with a measured one
        out["conditions"][condition] = {"compatibility": compatibility,
                                        **condition_rates(table, member["J"], member["K"], condition, clusters)}
        if condition == BASE:
            continue
        out["gains"][condition] = {"compatibility": compatibility, "metrics": {
            name: metric_gain(table, _population_ids(name, member), clusters, condition, name, draws, seed)
            for name in METRICS}}
    return out


# -- records from the oracle's objects -------------------------------------------------
def record_from_branch(branch, checkpoint, cluster: str | None = None, **known) -> dict:
    """A record from an oracle.continuation.BranchResult and its oracle.checkpoints.Checkpoint.

    A branch that ran keeps its first opportunity after the handoff: whether its
    evidence was delivered, whether a physical operation was legal there, its legal
    set and the native (behavioural) first choice b_i. BranchResult does not keep
    At a fixed-subgoal start (checkpoint.spec.fixed_subgoal) the branch keeps whether
    the correct operation and reference geometry were supplied (subgoal_supplied)
    and whether the supplied operation was physically confirmed (subgoal_confirmed);
    elsewhere subgoal_supplied is None (not a K start) unless the caller passes it in
    `known`, and subgoal_confirmed is known only where the reference executor
    attempted the operation (skill replacement): its first attempt's physical
    outcome. The J fields of a branch that did not run are None. Duck-typed so
    this module stays free of the simulator that oracle.continuation imports.
    """
    instance = checkpoint.spec.instance
    ran = getattr(branch, "native_scorable", None) is not None  # the branch kept its first opportunity
    record = {
        "checkpoint_id": branch.checkpoint_id,
        "cluster": cluster or _default_cluster(instance, branch.checkpoint_id),
        "condition": branch.condition,
        "status": branch.status,
        "verified": bool(checkpoint.verified),
        "evidence_delivered": getattr(branch, "evidence_delivered", None),
        "native_scorable": getattr(branch, "native_scorable", None),
        "first_choice": getattr(branch, "native_choice", None) if ran else branch.choice,
        "legal_set": getattr(branch, "legal_set", None),
        "choice_correct": branch.choice_correct if branch.status == OK else None,
        "fixed_subgoal": bool(getattr(checkpoint.spec, "fixed_subgoal", False)),
        "subgoal_supplied": getattr(branch, "subgoal_supplied", None),
        "subgoal_confirmed": (branch.subgoal_confirmed if getattr(branch, "subgoal_confirmed", None) is not None
                              else _executor_confirmed(branch.executor_attempts)),
        "completed": branch.completed if branch.status == OK else None,
    }
    record.update(known)
    return record


def _default_cluster(instance, checkpoint_id: str) -> str:
    """Checkpoints of one instance, and both members of an answer-changing pair, form one unit."""
    return getattr(instance, "pair_id", "") or getattr(instance, "instance_id", "") or checkpoint_id


def _executor_confirmed(attempts: list[dict]) -> bool | None:
    attempted = [a for a in attempts if a.get("status") == "attempted"]
    if not attempted:
        return None
    return attempted[0].get("outcome") == "confirmed"


def records_from_branches(checkpoints, branches: dict[str, list]) -> list[dict]:
    """branches: condition name -> BranchResults in checkpoint order (diagnose_oracle's).
    The condition is the table's key, so records and the gain table name conditions alike."""
    return [record_from_branch(branch, checkpoint, condition=name)
            for name, rows in branches.items() for branch, checkpoint in zip(rows, checkpoints)]
