"""The tested system's parameters as one launch gives them: `system_params` (a JSON
object) plus the agent's server and model when given as launch arguments of their own.
The launcher checks them with this before anything starts; the policy bridge builds its
system from the same result."""
from __future__ import annotations

import json

OWN_ARGUMENTS = ("agent_url", "agent_model")  # launch arguments that land in the parameters


def merged_system_params(text: str, **own: str) -> dict:
    """`text` (JSON, empty: {}) with each non-empty OWN_ARGUMENTS value in `own` added.
    ValueError saying what is wrong when `text` is not a JSON object."""
    text = text or "{}"
    try:
        params = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"must be a JSON object, e.g. '{{\"timeout_s\": 10}}'; got {text!r} ({exc})") from None
    if not isinstance(params, dict):
        raise ValueError(f"must be a JSON object; got {text!r}")
    for key in OWN_ARGUMENTS:
        if own.get(key):
            params[key] = own[key]
    return params
