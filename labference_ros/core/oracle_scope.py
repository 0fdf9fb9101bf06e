"""The scope check of Oracle interventions, shared by every task family (paper
5.1, 6.2-6.3; protocol test 8.5).

An intervention is bound to one opportunity and evidence version and may carry
only what its site declares. What is the same for every family lives here: the
modes, the payload's id, the binding, hidden and undeclared fields, and the
shape of an operation (exactly one, no coordinates, of a type the contract
knows, legal at a decision site). What a family's payload may say beyond its
keys (a reading's type, a label that must name a hole) comes in as its own
per-site checks, so every family refuses with the same reason strings:

  unknown_mode:<mode>              unsupported_site:<site>
  stale_or_unbound_opportunity     stale_evidence_version
  hidden_fields:<a,b>              undeclared_fields:<a,b>
  payload_not_json                 payload_not_object
  not_exactly_one_operation        missing_operation
  operation_fields:<a,b>           coordinates_in_operation
  unknown_operation_type           malformed_operation
  operation_not_legal              (and the family's own, site by site)
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from labference_ros.core.operations import Operation

MODES = ("assist", "replace")
COORDINATE_KEYS = ("position", "orientation", "pose", "x", "y", "z", "xyz", "quaternion", "coordinates",
                   "point", "translation", "rotation")
OPERATION_FIELDS = ("type", "object", "destination")

# A family's own check of one site's payload: the payload (a dict) -> reasons to refuse it.
SiteCheck = Callable[[dict], "list[str]"]


@dataclass(frozen=True)
class OracleSites:
    """A contract's supported Oracle sites and what each may carry (paper 6, Table 2):
    the keys a payload at each site may have, and evaluator-only facts whose names no
    payload may ever carry, at any depth."""

    sites: tuple[str, ...] = ()
    state_payload_keys: tuple[str, ...] = ()
    decision_payload_keys: tuple[str, ...] = ()
    geometry_payload_keys: tuple[str, ...] = ()
    skill_payload_keys: tuple[str, ...] = ()
    hidden_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScopeDecision:
    ok: bool
    reasons: tuple[str, ...] = ()
    payload_id: str = ""


def payload_id(payload) -> str:
    """The sha256 of a payload's canonical JSON (sorted keys, no spaces)."""
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def intervention_payload_id(intervention: dict) -> str:
    """The id a scope check gives an intervention's payload (a JSON string is parsed first;
    one that is no JSON has the id of the string itself)."""
    payload = intervention.get("payload")
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except ValueError:
            pass
    return payload_id(payload)


def payload_keys(value) -> Iterable[str]:
    """All keys anywhere in a nested payload."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from payload_keys(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from payload_keys(v)


def payload_numbers(value) -> Iterable[float]:
    """All numbers anywhere in a nested payload (booleans are not numbers here)."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from payload_numbers(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from payload_numbers(v)


def check_scope(intervention: dict, sites, *, current_opportunity_id: int | None,
                current_evidence_version: int | None, legal_set=(), operation_types: Iterable[str] = (),
                hidden_values: Mapping | None = None,
                site_checks: Mapping[str, SiteCheck] | None = None) -> ScopeDecision:
    """Check one intervention before delivery.

    sites: the contract's OracleSites (or any object with the same attributes).
    legal_set: the open opportunity's, which a decision's operation must belong to.
    operation_types: the contract's operation types (a decision or skill operation of
    another type is refused). hidden_values: further evaluator-only facts of this
    episode whose names must not appear (e.g. {"sample_mass_g": 130.0}). site_checks:
    the family's own checks, site -> check(payload) -> reasons, run after the shared
    ones; decision and skill operations are checked here unless a family names them."""
    reasons: list[str] = []
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
    if site not in sites.sites:
        reasons.append(f"unsupported_site:{site}")
    # Binding: one opportunity, current evidence. Stale bindings are never delivered.
    if current_opportunity_id is None or intervention.get("opportunity_id") != current_opportunity_id:
        reasons.append("stale_or_unbound_opportunity")
    if current_evidence_version is None or intervention.get("evidence_version") != current_evidence_version:
        reasons.append("stale_evidence_version")

    keys = {k.lower() for k in payload_keys(payload)}
    hidden = {k.lower() for k in sites.hidden_keys} | {k.lower() for k in (hidden_values or {})}
    leaked = sorted(keys & hidden)
    if leaked:
        reasons.append("hidden_fields:" + ",".join(leaked))

    allowed = getattr(sites, f"{site}_payload_keys", ()) if site in sites.sites else ()
    extra = sorted(set(payload) - set(allowed))
    if extra and site in sites.sites:
        reasons.append("undeclared_fields:" + ",".join(extra))

    checks = dict(site_checks or {})
    if site in checks:
        reasons += list(checks[site](payload))
    elif site in ("decision", "skill"):
        reasons += operation_reasons(payload, legal_set if site == "decision" else None, operation_types)

    return ScopeDecision(not reasons, tuple(reasons), pid)


def operation_reasons(payload: dict, legal_set, operation_types: Iterable[str]) -> list[str]:
    """Exactly one operation ({type, object, destination}), no coordinates, of a known
    type; legal_set (None: not checked) must contain it."""
    reasons = []
    op = payload.get("operation")
    if isinstance(op, list):
        return ["not_exactly_one_operation"]
    if not isinstance(op, dict):
        return ["missing_operation"]
    if set(op) - set(OPERATION_FIELDS):
        reasons.append("operation_fields:" + ",".join(sorted(set(op) - set(OPERATION_FIELDS))))
    if {k.lower() for k in payload_keys(op)} & set(COORDINATE_KEYS) or any(True for _ in payload_numbers(op)):
        reasons.append("coordinates_in_operation")
    if op.get("type") not in tuple(operation_types):
        return reasons + ["unknown_operation_type"]
    if legal_set is not None:
        try:
            parsed = Operation(str(op["type"]), str(op.get("object", "") or ""), str(op.get("destination", "") or ""))
        except (ValueError, KeyError):
            return reasons + ["malformed_operation"]
        if parsed not in tuple(legal_set):
            reasons.append("operation_not_legal")
    return reasons
