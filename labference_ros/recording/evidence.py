"""Evidence-version checks (paper 8.4): opportunities, intervention outputs and
the actions that follow them must share the evidence version they were bound to."""
from __future__ import annotations

import bisect
import json

from labference_ros.core.oracle_scope import payload_id
from labference_ros.msgconv import stamp_to_s

from .compare import Finding


class EvidenceTimeline:
    """Which evidence version was current at a sim time (from the rebuilt legal sets)."""

    def __init__(self, records: list[dict]):
        pts = sorted({(r["t"], r["evidence_version"]) for r in records
                      if r.get("record") == "legal_set" and r.get("opportunity_id") == -1})
        self.times = [t for t, _ in pts]
        self.versions = [v for _, v in pts]

    def at(self, t: float) -> int:
        i = bisect.bisect_right(self.times, t + 1e-9) - 1
        return self.versions[i] if i >= 0 else 0

    def next_change_after(self, t: float) -> float:
        i = bisect.bisect_right(self.times, t + 1e-9)
        return self.times[i] if i < len(self.times) else float("inf")


def check_opportunities(records: list[dict]) -> list[Finding]:
    out = []
    receipts = {r["opportunity_id"]: r for r in records
                if r.get("record") == "receipt" and r.get("kind") == "observation" and r.get("opened")}
    legal = {r["opportunity_id"]: r for r in records if r.get("record") == "legal_set" and r["opportunity_id"] >= 0}
    for opp in (r for r in records if r.get("record") == "opportunity"):
        oid, ev = opp["opportunity_id"], opp["evidence_version"]
        label = f"opportunity {oid}"
        rec = receipts.get(oid)
        if rec is None or rec["evidence_version"] != ev:
            out.append(Finding("evidence", "audit", label, "evidence_version", ev, rec and rec["evidence_version"],
                               "the delivery that opened it carries another evidence version"))
        ls = legal.get(oid)
        if ls is None or ls["evidence_version"] != ev:
            out.append(Finding("evidence", "audit", label, "legal_set.evidence_version", ev,
                               ls and ls["evidence_version"], "its legal set belongs to another evidence version"))
    return out


def check_published_events(episode_id: str, published: list, written: list[dict]) -> list[Finding]:
    """What the referee published on /referee/events is what it wrote to events.jsonl."""
    def key(e):
        return (e["event_id"], e["category"], e["opportunity_id"], e["evidence_version"])

    pub = {m.event_id: (m.event_id, m.category, int(m.opportunity_id), int(m.evidence_version))
           for m in published if m.episode_id == episode_id}
    wrote = {e["event_id"]: key(e) for e in written if e.get("record") == "event"}
    out = []
    for eid in sorted(set(pub) | set(wrote)):
        a, b = wrote.get(eid), pub.get(eid)
        if a != b:
            out.append(Finding("evidence", "/referee/events vs events.jsonl", f"event {eid}",
                               "(event_id, category, opportunity_id, evidence_version)", a, b,
                               "published and written events differ"))
    return out


def check_actions(episode_id: str, records: list[dict], chunks: list, policy_receipts: list,
                  interventions: list[tuple[float, dict]], delivered_late: dict | None = None) -> list[Finding]:
    """``delivered_late``: observation id -> sim time, for the observations the referee
    received after the episode's end (replay.rebuild's late receipts). A chunk that
    answers one of them, stamped at or after that delivery, comes after the scored
    episode, as its observation does, and is not checked: the bridge may still observe
    and answer while the runner finishes the episode. An id that also has an on-time
    receipt is checked as usual (a repeated delivery must not hide its chunks)."""
    timeline = EvidenceTimeline(records)
    delivered = {r["payload_id"]: r for r in records if r.get("record") == "receipt" and r["kind"] == "observation"}
    invalidated = {m.payload_id for m in policy_receipts if m.status == "invalidated"}
    after_end = {oid: t for oid, t in (delivered_late or {}).items() if oid not in delivered}
    out = []
    def answers_after_end(c) -> bool:
        delivered_at = after_end.get(c.observation_id)
        return delivered_at is not None and stamp_to_s(c.header.stamp) >= delivered_at - 1e-9

    mine = [c for c in chunks if c.episode_id == episode_id and not answers_after_end(c)]
    for c in mine:
        t, ev, label = stamp_to_s(c.header.stamp), int(c.evidence_version), f"chunk {c.chunk_id}"
        rec = delivered.get(c.observation_id)
        if rec is None:
            out.append(Finding("evidence", "/policy/action_chunks", label, "observation_id", c.observation_id,
                               None, "computed from an observation the referee never saw delivered"))
        elif rec["evidence_version"] != ev:
            out.append(Finding("evidence", "/policy/action_chunks", label, "evidence_version", ev,
                               rec["evidence_version"], f"differs from the delivery of {c.observation_id}"))
        current = timeline.at(t)
        if ev < current and c.chunk_id not in invalidated:
            out.append(Finding("evidence", "/policy/action_chunks", label, "evidence_version", ev, current,
                               "stale chunk (older than the latest handoff) was not invalidated"))
    # After a delivered intervention, the actions of its evidence version carry that version.
    status = {r["payload_id"]: r["status"] for r in records if r.get("record") == "receipt"
              and r["kind"] == "intervention"}
    for t, x in interventions:
        try:
            body = x["payload"]
            pid = payload_id(json.loads(body) if isinstance(body, str) else body)
        except (ValueError, TypeError, KeyError):
            continue
        if status.get(pid) != "delivered":
            continue
        until = timeline.next_change_after(t)
        for c in mine:
            tc = stamp_to_s(c.header.stamp)
            if t <= tc < until and int(c.evidence_version) != x["evidence_version"] \
                    and c.chunk_id not in invalidated:
                out.append(Finding("evidence", "/policy/action_chunks", f"chunk {c.chunk_id}", "evidence_version",
                                   int(c.evidence_version), x["evidence_version"],
                                   f"follows intervention {x.get('intervention_id')} bound to another version"))
    return out
