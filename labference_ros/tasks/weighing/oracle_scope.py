"""Scope check of Oracle interventions (paper 5.1, 6; protocol test 8.5).

An intervention is bound to one opportunity and evidence version and may
carry only what its site declares:
- state: displayed load, stability, visible standards on the pan -- never the
  hidden sample mass, the goal set W*, the required standard or a legal set;
- decision: exactly one legal operation (type, object, destination) and no
  coordinates;
- geometry: a pose for a named object, nothing about masses or goals;
- skill: one operation to execute (the tested system's own choice).
The binding, hidden and undeclared fields and the operation's shape are every
family's (core/oracle_scope.py); this module adds what weighing's state and
geometry payloads may say.
"""
from __future__ import annotations

from labference_ros.core.operations import ADD, REMOVE, STOP, WAIT
from labference_ros.core.oracle_scope import (  # noqa: F401 -- the shared names, as this module gave them before
    COORDINATE_KEYS,
    MODES,
    ScopeDecision,
    check_scope,
    payload_id,
)
from labference_ros.tasks.weighing.contract import TaskContract

WEIGHING_OPERATION_TYPES = (ADD, REMOVE, WAIT, STOP)  # the contract's operation_types


def validate_intervention(intervention: dict, contract: TaskContract, *, current_opportunity_id: int | None,
                          current_evidence_version: int | None, legal_set=(),
                          hidden_values: dict | None = None) -> ScopeDecision:
    """Check one intervention before delivery (core.oracle_scope.check_scope with this
    family's state and geometry checks). hidden_values: evaluator-only facts
    (e.g. {"sample_mass_g": 130.0, "required": ["std_50"]}) whose names must not appear."""
    return check_scope(intervention, contract.diagnostics, current_opportunity_id=current_opportunity_id,
                       current_evidence_version=current_evidence_version, legal_set=legal_set,
                       operation_types=WEIGHING_OPERATION_TYPES, hidden_values=hidden_values,
                       site_checks=site_checks(contract))


def site_checks(contract: TaskContract) -> dict:
    """What weighing's state and geometry payloads may say beyond their keys."""
    return {"state": lambda p: _state_reasons(p, contract), "geometry": lambda p: _geometry_reasons(p, contract)}


def _state_reasons(payload: dict, contract: TaskContract) -> list[str]:
    reasons = []
    if "displayed_g" in payload and not isinstance(payload["displayed_g"], (int, float)):
        reasons.append("displayed_g_not_number")
    if "stable" in payload and not isinstance(payload["stable"], bool):
        reasons.append("stable_not_bool")
    on_pan = payload.get("standards_on_pan", [])
    if not isinstance(on_pan, list) or not all(s in contract.standards_g for s in on_pan):
        reasons.append("standards_on_pan_invalid")
    return reasons


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
