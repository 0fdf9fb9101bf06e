"""The campaign spec's JSON Schema, checked with jsonschema before anything is locked.

A malformed spec is refused naming where (e.g. `arms[0].generate.n`) and what
is wrong; besides the schema, build_lock refuses a launch file and tested
systems that do not exist here, so a lock can always run.
"""
from __future__ import annotations

import jsonschema

_ID = {"type": "string", "minLength": 1}
_SEED = {"type": "integer", "minimum": 0}

ARM = {
    "type": "object",
    "required": ["system", "condition"],
    "additionalProperties": False,
    "properties": {
        "id": _ID,
        "system": _ID,
        "condition": _ID,
        "args": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
        "instances": _ID,
        "generate": {
            "type": "object",
            "required": ["n"],
            "additionalProperties": False,
            "properties": {"n": {"type": "integer", "minimum": 1}, "task_seed": _SEED, "layout_seed": _SEED,
                           "policy_seed": _SEED, "pairs": {"type": "boolean"}},
        },
    },
    "anyOf": [{"required": ["instances"]}, {"required": ["generate"]}],
}

_RATE = {"type": "number", "minimum": 0, "maximum": 1}
_OPEN_UNIT = {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}

# A pre-registered sequential comparison (campaign/sequential.py, core/sequential.py).
SEQUENTIAL = {
    "type": "object",
    "required": ["comparisons", "max_episodes"],
    "additionalProperties": False,
    "properties": {
        "test": {"enum": ["paired_mixture_martingale"]},
        "metric": {"enum": ["success"]},
        "alpha": _OPEN_UNIT,
        "max_episodes": {"type": "integer", "minimum": 1},
        "prior": {"type": "number", "exclusiveMinimum": 0},
        "comparisons": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["candidate", "reference"], "additionalProperties": False,
            "properties": {"candidate": _ID, "reference": _ID}}},
    },
}

# What `labference campaign plan` writes (core/sequential.plan); its numbers are locked with the spec.
PLAN = {
    "type": "object",
    "required": ["p0", "p1", "alpha", "power"],
    "properties": {"p0": _RATE, "p1": _RATE, "alpha": _OPEN_UNIT, "power": _OPEN_UNIT,
                   "fixed": {"type": ["object", "null"]}, "sequential": {"type": ["object", "null"]},
                   "interval": {"type": ["object", "null"]}},
}

SPEC = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["arms"],
    "additionalProperties": False,
    "properties": {
        "name": _ID,
        "output_dir": _ID,
        "launch_file": _ID,
        "chunk_size": {"type": "integer", "minimum": 1},
        "seeds": {"type": "object", "additionalProperties": {"type": "integer"}},
        "code_root": _ID,
        "code_paths": {"type": "array", "items": _ID, "minItems": 1},
        "dependencies": {"type": "array", "items": _ID},
        "arms": {"type": "array", "items": ARM, "minItems": 1},
        "sequential": SEQUENTIAL,
        "plan": PLAN,
    },
}


def _where(path) -> str:
    out = "spec"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def validate_spec(spec) -> None:
    """ValueError naming every place the spec breaks the schema."""
    validator = jsonschema.Draft202012Validator(SPEC)
    errors = sorted(validator.iter_errors(spec), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = [f"{_where(e.absolute_path)}: {e.message}" for e in errors]
        raise ValueError("campaign spec does not match its schema: " + "; ".join(lines))
