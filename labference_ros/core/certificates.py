"""Instance certificates (SciHorizon-eLab 3.4, eq. 5): what a population file
says about each instance's certification, and the check a campaign lock runs.

A population file (an instance list or a run's instances.json,
core.instance_lists) carries its certificates beside the instances, keyed by
instance id, so an instance's own JSON (which the launcher reads back into the
family's instance type) never changes:

    {"schema": 1, "generator": ..., "meta": {...}, "instances": [...],
     "certification": {"schema": 1, "certificates": {instance_id: certificate},
                       "summary": {...}, "rejected_instances": [...]}}

(rejected_instances: those `labference certify POP drop_rejected:=true` left out
of the population; the summary still counts them.)

A certificate names the instance's content hash; an instance edited after it
was certified no longer matches and counts as uncertified. Nothing here runs a
simulator (campaign.certify does); the lock only reads.
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter

CERTIFICATE_SCHEMA = 1
CERTIFIED, REJECTED = "certified", "rejected"


def instance_sha256(item: dict) -> str:
    """Content hash of one instance as its JSON dict (key order does not matter)."""
    return hashlib.sha256(json.dumps(item, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def certificates_of(data: dict) -> dict[str, dict]:
    """instance id -> certificate, from a population file's JSON (empty without any)."""
    if not isinstance(data, dict):
        return {}
    return dict(((data.get("certification") or {}).get("certificates")) or {})


def refusal(item: dict, certificate: dict | None) -> str | None:
    """Why `item` may not enter a campaign lock (None: it carries a matching, passing
    certificate)."""
    iid = item.get("instance_id", "?")
    if not certificate:
        return f"instance {iid} is not certified (run `labference certify` on its population first)"
    if certificate.get("instance_sha256") != instance_sha256(item):
        return f"instance {iid} changed after it was certified (certify its population again)"
    if certificate.get("verdict") != CERTIFIED:
        step = certificate.get("failing_step") or "?"
        return f"instance {iid} failed certification at step {step}: {certificate.get('reason') or 'no reason'}"
    return None


def summary(certificates: dict[str, dict], instance_ids) -> dict:
    """How many instances of a population were certified, rejected (by failing step
    and reason) or never certified."""
    ids = list(instance_ids)
    verdicts = [certificates.get(i, {}).get("verdict") for i in ids]
    rejected = [certificates[i] for i, v in zip(ids, verdicts) if v == REJECTED]
    return {"instances": len(ids), "certified": sum(v == CERTIFIED for v in verdicts),
            "rejected": len(rejected), "uncertified": sum(v not in (CERTIFIED, REJECTED) for v in verdicts),
            "rejected_by_step": dict(sorted(Counter(c.get("failing_step") or "?" for c in rejected).items())),
            "rejections": [{"instance_id": c.get("instance_id"), "failing_step": c.get("failing_step"),
                            "reason": c.get("reason")} for c in rejected]}


def format_summary(s: dict) -> str:
    lines = [f"{s['certified']}/{s['instances']} instance(s) certified, {s['rejected']} rejected"
             + (f", {s['uncertified']} not certified" if s.get("uncertified") else "")
             + (f"; {s['dropped']} rejected instance(s) left out of the population" if s.get("dropped") else "")]
    if s.get("rejected_by_step"):
        lines.append("  rejected at step: " + ", ".join(f"{k} {v}" for k, v in s["rejected_by_step"].items()))
    for r in s.get("rejections") or []:
        lines.append(f"  rejected {r['instance_id']}: step {r['failing_step']}: {r['reason']}")
    return "\n".join(lines)
