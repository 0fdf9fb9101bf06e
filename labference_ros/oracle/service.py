"""Topic-side Oracle logic, kept free of ROS so it is testable: bind one
support condition to the latest opportunity, build its payloads from
authorized facts (the displayed reading, the published legal set), check
scope with the task validator and produce interventions and receipts."""
from __future__ import annotations

import itertools
import json

from labference_ros.core.contract import contract_for
from labference_ros.core.oracle_scope import payload_id, validate_intervention
from labference_ros.core.operations import Operation

from .supports import condition_name, decision_rule, parse_condition

TOPIC_SITES = ("state", "decision")  # skill/geometry need the in-process executor or a geometry hook


class OracleService:
    def __init__(self, condition: str, task_condition: str = "basic", episode_id: str = ""):
        self.supports = parse_condition(condition)
        bad = [str(s) for s in self.supports if s.site not in TOPIC_SITES]
        if bad:
            raise ValueError(f"supports {bad} cannot be delivered over topics; use the in-process protocol")
        self.name = condition_name(self.supports)
        self.contract = contract_for(task_condition)
        self.episode_id = episode_id
        self.reading: dict | None = None  # latest {"displayed_g", "stable"}
        self.legal: dict[int, tuple[Operation, ...]] = {}  # opportunity id -> legal set
        self.opportunity: tuple[int, int] | None = None  # (id, evidence_version)
        self._sent: set[tuple[int, str]] = set()
        self._ids = itertools.count(1)

    def on_reading(self, displayed_g: float, stable: bool, valid: bool = True) -> None:
        self.reading = {"displayed_g": float(displayed_g), "stable": bool(stable)} if valid else None

    def on_legal_set(self, opportunity_id: int, operations) -> None:
        self.legal[int(opportunity_id)] = tuple(operations)

    def on_opportunity(self, opportunity_id: int, evidence_version: int) -> None:
        self.opportunity = (int(opportunity_id), int(evidence_version))

    def pending(self) -> list[tuple[dict | None, dict]]:
        """(intervention or None, receipt) for each support not yet sent at the
        current opportunity whose facts are available now."""
        if self.opportunity is None:
            return []
        opp_id, ev = self.opportunity
        out = []
        for s in self.supports:
            if (opp_id, s.site) in self._sent:
                continue
            if s.site == "state":
                if self.reading is None:
                    continue
                payload = dict(self.reading)
            else:
                if opp_id not in self.legal or decision_rule(self.legal[opp_id]) is None:
                    continue
                payload = {"operation": decision_rule(self.legal[opp_id]).to_dict()}
            self._sent.add((opp_id, s.site))
            iv = {"mode": s.mode, "site": s.site, "opportunity_id": opp_id, "evidence_version": ev,
                  "payload": payload, "episode_id": self.episode_id,
                  "intervention_id": f"{self.episode_id}:i{next(self._ids):05d}"}
            d = validate_intervention(iv, self.contract, current_opportunity_id=opp_id,
                                      current_evidence_version=ev,
                                      legal_set=self.legal.get(opp_id, ()))
            receipt = {"episode_id": self.episode_id, "receipt_id": iv["intervention_id"],
                       "kind": "intervention", "payload_id": payload_id(payload), "opportunity_id": opp_id,
                       "evidence_version": ev, "status": "delivered" if d.ok else "rejected_scope",
                       "original_output_json": "", "substituted_output_json": json.dumps(payload),
                       "detail_json": json.dumps({"site": s.site, "mode": s.mode, "reasons": list(d.reasons)})}
            out.append((iv if d.ok else None, receipt))
        return out
