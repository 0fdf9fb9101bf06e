"""Oracle gain tables (eq. 3) for the report: `oracle_gains.json` records.

`labference diagnose-oracle ... --out DIR/oracle_gains.json` writes one:
the result of oracle.diagnose.diagnose_oracle without its per-branch objects
(system, design, population with each checkpoint's status, table of
condition rows, interactions, and the J/K population metrics of
reporting/checkpoint_populations.py under `populations`). The report shows every such file found
under its run directories.
"""
from __future__ import annotations

import json
from pathlib import Path

FILENAME = "oracle_gains.json"
RECORD_SCHEMA = 1


def gains_record(result: dict) -> dict:
    """The JSON-safe part of a diagnose_oracle result."""
    return {"oracle_gains_schema": RECORD_SCHEMA,
            **{k: result[k] for k in ("system", "design", "population", "table", "interactions", "populations")
                if k in result}}


def find(roots) -> list[dict]:
    """Every readable oracle_gains.json under the roots, with its path."""
    out = []
    for root in roots:
        for path in sorted(Path(root).rglob(FILENAME)):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and isinstance(data.get("table"), dict):
                out.append({"path": str(path), **data})
    return out
