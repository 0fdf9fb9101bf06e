"""What the policy bridge's start and finish answers add to run.json."""
from __future__ import annotations

import json

from labference_ros.core.records import amend_run_json


def record_policy_profile(out_dir, message: str) -> None:
    """The bridge answers start_episode with the tested system's resolved profile
    (name, privileged flag, ActionSpec and its hash, parameters); run.json keeps it."""
    try:
        profile = json.loads(message).get("policy") or {}
    except (ValueError, AttributeError):
        return
    if profile and (out_dir / "run.json").exists():
        amend_run_json(out_dir, "policy", profile)
    support = json.loads(message).get("intervention") or {}
    if support.get("compatibility") and (out_dir / "run.json").exists():
        amend_run_json(out_dir, "intervention", {"compatibility": support["compatibility"]})


def record_system_usage(out_dir, message: str) -> None:
    """The bridge answers finish_episode with the tested system's episode summary;
    its `usage` (the agent's per-call tokens and times, per-episode totals) goes
    into run.json. A system without one leaves `usage` out: unknown, never zero."""
    try:
        usage = (json.loads(message).get("system_summary") or {}).get("usage")
    except (ValueError, AttributeError):
        return
    if isinstance(usage, dict) and (out_dir / "run.json").exists():
        amend_run_json(out_dir, "usage", usage)
