"""Gain table over a checkpoint population (eq. 3, 7.4).

Per condition: Delta(Y) = mean(Y_supported - Y_base) over the N registered
pairs, only once every pair is resolved; until then provisional bounds
s/N and (s+u)/N on the supported branch's outcome. Incompatible conditions
get their compatibility status and no gain."""
from __future__ import annotations

from labference_ros.core.metrics import gain, interaction, rate

OUTCOMES = ("choice_correct", "completed")


def _y(branch, outcome):
    return None if not branch.resolved else float(getattr(branch, outcome))


def condition_row(base: list, supported: list) -> dict:
    n = len(base)
    statuses = {b.status for b in supported if b.status.startswith("incompatible")}
    row = {"N": n, "compatibility": sorted(statuses)[0] if statuses else "compatible"}
    if statuses:
        return row
    pairs = {o: [(_y(s, o), _y(b, o)) for s, b in zip(supported, base)] for o in OUTCOMES}
    unresolved = sum(1 for s, b in zip(supported, base) if not (s.resolved and b.resolved))
    row["unresolved"] = unresolved
    for o, pr in pairs.items():
        row[f"gain_{o}"] = gain(pr)
        # Bounds on the supported branch's rate: its successes, and those plus its
        # unresolved members (a success whose base is unresolved counts once).
        s = sum(1 for a, _ in pr if a == 1.0)
        u = sum(1 for a, _ in pr if a is None)
        row[f"{o}_supported"] = s
        row[f"{o}_base"] = sum(1 for _, b in pr if b == 1.0)
        row[f"{o}_bounds"] = (rate(s, n), rate(s + u, n))
    receipts = [r for b in supported for r in b.receipts]
    delivered = [r for r in receipts if r["status"] == "delivered"]
    agreed = [r for r in delivered if r.get("agreement") is not None]
    row.update(interventions=len(receipts), delivered=len(delivered),
               delivery_rate=rate(len(delivered), len(receipts)),
               agreement_rate=rate(sum(1 for r in agreed if r["agreement"]), len(agreed)))
    return row


def interactions(table: dict) -> dict:
    """Joint-support contrasts Y(o1,o2) - Y(o1) - Y(o2) + Y(0), on supported-branch means."""
    out = {}
    for name, row in table.items():
        parts = name.split("+")
        if len(parts) != 2 or not all(p in table for p in parts) or "base" not in table:
            continue
        for o in OUTCOMES:
            ys = [table[k].get(f"mean_{o}") for k in (name, parts[0], parts[1], "base")]
            if None not in ys:
                out.setdefault(name, {})[o] = interaction(*ys)
    return out
