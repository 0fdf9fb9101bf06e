"""Scope check of Oracle interventions (paper 5.1, 6; protocol test 8.5).

An intervention is bound to one opportunity and evidence version and may
carry only what its site declares:
- state: displayed load, stability, visible standards on the pan -- never the
  hidden sample mass, the goal set W*, the required standard or a legal set;
- decision: exactly one legal operation (type, object, destination) and no
  coordinates;
- geometry: a pose for a named object, nothing about masses or goals;
- skill: one operation to execute (the tested system's own choice).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from labference_ros.core.operations import ADD, REMOVE, STOP, WAIT, Operation
from labference_ros.tasks.weighing.contract import TaskContract

MODES = ("assist", "replace")
WEIGHING_OPERATION_TYPES = (ADD, REMOVE, WAIT, STOP)  # the contract's operation_types
COORDINATE_KEYS = ("position", "orientation", "pose", "x", "y", "z", "xyz", "quaternion", "coordinates",
                   "point", "translation", "rotation")


@dataclass(frozen=True)
class ScopeDecision:
    ok: bool
    reasons: tuple[str, ...] = ()
    payload_id: str = ""


def payload_id(payload) -> str:
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def _keys(value, prefix=""):
    """All keys anywhere in a nested payload."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _keys(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _keys(v)


def _numbers(value):
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _numbers(v)


def validate_intervention(intervention: dict, contract: TaskContract, *, current_opportunity_id: int | None,
                          current_evidence_version: int | None, legal_set=(),
                          hidden_values: dict | None = None) -> ScopeDecision:
    """Check one intervention before delivery. hidden_values: evaluator-only facts
    (e.g. {"sample_mass_g": 130.0, "required": ["std_50"]}) whose names must not appear."""
    reasons: list[str] = []
    diag = contract.diagnostics
    mode = str(intervention.get("mode", ""))
    site = str(intervention.get("site", ""))
    payload = intervention.get("payload")
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except ValueError:
            return ScopeDecision(False, ("payload_not_json",))
    if not isinstance(payload, dict):
        return ScopeDecision(False, ("payload_not_object",))
    pid = payload_id(payload)

    if mode not in MODES:
        reasons.append(f"unknown_mode:{mode}")
    if site not in diag.sites:
        reasons.append(f"unsupported_site:{site}")
    # Binding: one opportunity, current evidence. Stale bindings are never delivered.
    if current_opportunity_id is None or intervention.get("opportunity_id") != current_opportunity_id:
        reasons.append("stale_or_unbound_opportunity")
    if current_evidence_version is None or intervention.get("evidence_version") != current_evidence_version:
        reasons.append("stale_evidence_version")

    keys = {k.lower() for k in _keys(payload)}
    hidden = {k.lower() for k in diag.hidden_keys} | {k.lower() for k in (hidden_values or {})}
    leaked = sorted(keys & hidden)
    if leaked:
        reasons.append("hidden_fields:" + ",".join(leaked))

    allowed = {"state": diag.state_payload_keys, "decision": diag.decision_payload_keys,
               "geometry": diag.geometry_payload_keys, "skill": diag.skill_payload_keys}.get(site, ())
    extra = sorted(set(payload) - set(allowed))
    if extra and site in diag.sites:
        reasons.append("undeclared_fields:" + ",".join(extra))

    if site == "state":
        if "displayed_g" in payload and not isinstance(payload["displayed_g"], (int, float)):
            reasons.append("displayed_g_not_number")
        if "stable" in payload and not isinstance(payload["stable"], bool):
            reasons.append("stable_not_bool")
        on_pan = payload.get("standards_on_pan", [])
        if not isinstance(on_pan, list) or not all(s in contract.standards_g for s in on_pan):
            reasons.append("standards_on_pan_invalid")
    elif site in ("decision", "skill"):
        reasons += _operation_reasons(payload, legal_set if site == "decision" else None)
    elif site == "geometry":
        reasons += _geometry_reasons(payload, contract)

    return ScopeDecision(not reasons, tuple(reasons), pid)


FRAME_KEYS = ("object", "position", "axis", "orientation", "frame")


def _geometry_reasons(payload: dict, contract: TaskContract) -> list[str]:
    """One frame of a named standard, or Assist's list of candidate frames."""
    frames = payload.get("candidates", [payload]) if "candidates" in payload else [payload]
    if not isinstance(frames, list) or not all(isinstance(f, dict) for f in frames):
        return ["geometry_candidates_invalid"]
    reasons = []
    for f in frames:
        if "object" in f and f["object"] not in contract.standards_g:
            reasons.append("geometry_object_unknown")
        extra = sorted(set(f) - set(FRAME_KEYS))
        if extra:
            reasons.append("geometry_frame_fields:" + ",".join(extra))
    return sorted(set(reasons))


def _operation_reasons(payload: dict, legal_set) -> list[str]:
    reasons = []
    op = payload.get("operation")
    if isinstance(op, list):
        return ["not_exactly_one_operation"]
    if not isinstance(op, dict):
        return ["missing_operation"]
    if set(op) - {"type", "object", "destination"}:
        reasons.append("operation_fields:" + ",".join(sorted(set(op) - {"type", "object", "destination"})))
    if {k.lower() for k in _keys(op)} & set(COORDINATE_KEYS) or any(True for _ in _numbers(op)):
        reasons.append("coordinates_in_operation")
    if op.get("type") not in WEIGHING_OPERATION_TYPES:
        return reasons + ["unknown_operation_type"]
    if legal_set is not None:
        try:
            parsed = Operation(str(op["type"]), str(op.get("object", "") or ""), str(op.get("destination", "") or ""))
        except (ValueError, KeyError):
            return reasons + ["malformed_operation"]
        if parsed not in tuple(legal_set):
            reasons.append("operation_not_legal")
    return reasons
