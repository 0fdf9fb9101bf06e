"""Topic-side Oracle logic, kept free of ROS so it is testable: bind one
support condition to each opportunity the referee opens, build its payloads
from authorized facts only and check scope with the task validator.

Everything a payload needs arrives in the opportunity's legal-set message
(the referee publishes it when the opportunity opens): the legal set for the
decision rule, and the reference state whose stable reading is what the
balance display showed at that evidence version. Taking the displayed load
from that message, not from whichever /balance/reading arrived last, makes
the payload a function of the evidence version alone, so a full-rollout run
is reproducible. Every support gets a receipt at every opportunity, even when
it cannot be built (status "no_facts"), so the policy bridge can wait for a
definite answer before the tested system acts."""
from __future__ import annotations

import itertools
import json

from labference_ros.core.contract import contract_for
from labference_ros.core.operations import Operation
from labference_ros.core.oracle_scope import payload_id, validate_intervention

from .supports import condition_name, decision_rule, parse_launch_support

TOPIC_SITES = ("state", "decision")  # skill/geometry need the in-process executor or a geometry hook
NO_FACTS = "no_facts"


def topic_supports(condition: str):
    """Supports of a launch-argument condition; refuses sites topics cannot serve."""
    supports = parse_launch_support(condition)
    bad = [str(s) for s in supports if s.site not in TOPIC_SITES]
    if bad:
        raise ValueError(f"supports {bad} cannot be delivered over topics (sites {TOPIC_SITES}); "
                         "use the in-process protocol (labference diagnose-oracle)")
    return supports


class OracleService:
    def __init__(self, condition: str, task_condition: str = "basic"):
        self.supports = topic_supports(condition)
        self.name = condition_name(self.supports)
        self.contract = contract_for(task_condition)
        self.episode_id = ""
        self._sent: set[tuple[int, str]] = set()
        self._ids = itertools.count(1)

    def on_opportunity_legal_set(self, episode_id: str, opportunity_id: int, evidence_version: int,
                                 operations, state: dict) -> list[tuple[dict | None, dict]]:
        """(intervention or None, receipt) per support for a newly opened opportunity.
        Legal sets not bound to an opportunity (id < 0) and repeats give nothing."""
        if opportunity_id < 0 or not self.supports:
            return []
        if episode_id != self.episode_id:  # a new episode: ids restart
            self.episode_id, self._sent, self._ids = episode_id, set(), itertools.count(1)
        ops = tuple(operations)
        out = []
        for s in self.supports:
            if (opportunity_id, s.site) in self._sent:
                continue
            self._sent.add((opportunity_id, s.site))
            payload = self._payload(s.site, ops, state or {})
            iid = f"{episode_id}:i{next(self._ids):05d}"
            iv = {"mode": s.mode, "site": s.site, "opportunity_id": int(opportunity_id),
                  "evidence_version": int(evidence_version), "payload": payload or {},
                  "episode_id": episode_id, "intervention_id": iid}
            if payload is None:
                status, reasons = NO_FACTS, ["no_certified_facts_at_this_opportunity"]
            else:
                d = validate_intervention(iv, self.contract, current_opportunity_id=int(opportunity_id),
                                          current_evidence_version=int(evidence_version), legal_set=ops)
                status, reasons = ("delivered" if d.ok else "rejected_scope"), list(d.reasons)
            receipt = {"episode_id": episode_id, "receipt_id": iid, "kind": "intervention",
                       "payload_id": payload_id(payload or {}), "opportunity_id": int(opportunity_id),
                       "evidence_version": int(evidence_version), "status": status,
                       "original_output_json": "", "substituted_output_json": json.dumps(payload or {}),
                       "detail_json": json.dumps({"site": s.site, "mode": s.mode, "reasons": reasons})}
            out.append((iv if status == "delivered" else None, receipt))
        return out

    @staticmethod
    def _payload(site: str, ops: tuple[Operation, ...], state: dict) -> dict | None:
        if site == "state":
            # Only what the display certified: the stable reading and its indicator.
            if not state.get("reading_ready") or state.get("last_stable_reading_g") is None:
                return None
            return {"displayed_g": float(state["last_stable_reading_g"]), "stable": True}
        op = decision_rule(ops)
        return None if op is None else {"operation": op.to_dict()}
