"""Object bindings side by side (held-out objects, SciHorizon-eLab's transfer protocol).

A held-out binding is a condition whose scenes hold other objects of the same roles
(cell description `bindings`); its cells carry identity field `binding` (None: the
default objects). Cells of one task that differ only in their condition and binding
form a group; a group with two bindings or more is shown as one table, a row per cell
with its k/N and 95 % intervals, so transfer reads across the rows. Of the default
objects' cells, only those of the conditions the held-out ones rebind are rows. The paired
difference on the same draws is `report --compare` (a held-out instance is its twin's
unit, reporting/episodes.unit).
"""
from __future__ import annotations

from labference_ros.tasks import family as task_family

from .identity import cell_name

DEFAULT = "default"  # how the table names the default objects (identity binding None)
# The rows' rates: the report's interval keys, in the order shown.
RATES = (("valid completion", "valid_completion"), ("SR", "SR"), ("selection", "selection"),
         ("success", "success_rate"))
APART = ("task_condition", "binding")  # what may differ within a group


def _task(cell_eps: list[dict]) -> str | None:
    for ep in cell_eps:
        task = ((ep.get("run") or {}).get("task") or {}).get("contract_id")
        if task:
            return task.split(".", 1)[0]
    return None


def groups(cells: list[dict], episodes_by_cell: list[list[dict]]) -> list[dict]:
    """cells: the report's cells (report.build); episodes_by_cell: each one's attempts, in
    the same order. -> [{"task", "shared": {field: value}, "rows": [{"binding", "condition",
    "units", "intervals": {key: interval}}]}] for each group with two bindings or more."""
    found: dict[tuple, dict] = {}
    for c, eps in zip(cells, episodes_by_cell):
        shared = {k: v for k, v in c["cell"].items() if k not in APART}
        key = (_task(eps), tuple(sorted((k, str(v)) for k, v in shared.items())))
        group = found.setdefault(key, {"task": key[0], "shared": shared, "rows": []})
        group["rows"].append({"binding": c["cell"].get("binding") or DEFAULT,
                              "condition": c["cell"].get("task_condition"),
                              "units": c["coverage"]["units"],
                              "intervals": {k: c["intervals"].get(k) for _, k in RATES}})
    out = []
    for group in found.values():
        _keep_rebound(group)
        if len({r["binding"] for r in group["rows"]}) > 1:
            group["rows"].sort(key=lambda r: (r["binding"] != DEFAULT, r["binding"], str(r["condition"])))
            out.append(group)
    return out


def _rebinds(task: str | None, condition: str | None) -> str | None:
    """The condition a held-out condition repeats with other objects (its contract's
    `rebinds`), or None where the family or condition is unknown here."""
    if not task or not condition:
        return None
    try:
        return getattr(task_family(task).contract_for(condition), "rebinds", None)
    except (KeyError, ValueError, TypeError, NotImplementedError):
        return None


def _keep_rebound(group: dict) -> None:
    """Default-object rows only of the conditions the group's held-out ones rebind (basic
    beside heldout_blocks, not extended or hidden_event), so each row compares like with
    like; all of them where no held-out condition names what it rebinds."""
    rebound = {_rebinds(group["task"], r["condition"]) for r in group["rows"] if r["binding"] != DEFAULT}
    rebound.discard(None)
    if rebound:
        group["rows"] = [r for r in group["rows"] if r["binding"] != DEFAULT or r["condition"] in rebound]


def format_groups(found: list[dict], rate_text) -> str:
    """The groups as text tables; rate_text formats one interval (report.rate_text)."""
    blocks = []
    for g in found:
        head = [("binding", "condition", "units", *(label for label, _ in RATES))]
        rows = [(r["binding"], str(r["condition"]), str(r["units"]),
                 *(rate_text(r["intervals"].get(k) or {}) for _, k in RATES)) for r in g["rows"]]
        widths = [max(len(row[i]) for row in head + rows) for i in range(len(head[0]))]
        lines = [f"== bindings side by side: task={g['task']} / {cell_name(g['shared'])}"]
        lines += ["  " + "  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in head + rows]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
