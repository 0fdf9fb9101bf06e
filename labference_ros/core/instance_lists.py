"""Instance-list files, one format for every task family: a JSON object with
the list schema, the generator version that made the instances, free meta
data, and the instances as their own JSON (each family's to_json/from_json)."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

LIST_SCHEMA = 1


def write_instance_list(path: str | Path, instances, generator: str, meta: dict | None = None) -> None:
    """Instances (or pairs, flattened in order) to one JSON file."""
    flat = []
    for item in instances:
        flat += list(item) if isinstance(item, tuple) else [item]
    data = {"schema": LIST_SCHEMA, "generator": generator, "meta": meta or {},
            "instances": [json.loads(i.to_json()) for i in flat]}
    Path(path).write_text(json.dumps(data, sort_keys=True, indent=1) + "\n", encoding="utf-8")


def read_instance_list(path: str | Path, from_json: Callable[[str], object]) -> list:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("schema") != LIST_SCHEMA:
        raise ValueError(f"unsupported instance list schema {data.get('schema')!r}")
    return [from_json(json.dumps(d)) for d in data["instances"]]
