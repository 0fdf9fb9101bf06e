"""Full-rollout support at the policy boundary, free of rclpy (messages are
read by field): the policy bridge's side of the Oracle protocol.

At each handoff that opens an opportunity, every supported site goes through
three stages before the tested system acts:
  oracle   -- wait for the oracle's receipt (delivered, rejected_scope, no_facts)
              and, when delivered, its intervention;
  referee  -- the bridge forwards the intervention on /policy/receipts and waits
              for the referee's scope check (its receipt on /referee/receipts);
  done     -- a support the referee accepted is handed to the system (`supply`).
Supports the system has no interface for never reach it: their compatibility
status goes into run.json instead (paper 6.3, capability negotiation).
"""
from __future__ import annotations

import json

from .service import topic_supports
from .supports import COMPATIBLE, compatibility, intervention_identity

FULL_ROLLOUT = "full_rollout"


def _site(msg) -> str:
    try:
        return str(json.loads(msg.detail_json or "{}").get("site", ""))
    except ValueError:
        return ""


class SupportHandoff:
    def __init__(self, condition: str, system):
        self.supports = topic_supports(condition)
        self.system = system
        self.compatibility = {str(s): compatibility(system, s) for s in self.supports}
        self.awaited = tuple(s for s in self.supports if self.compatibility[str(s)] == COMPATIBLE)
        self.start_episode("")

    def profile(self) -> dict:
        """run.json's intervention section for this run."""
        out = intervention_identity(self.supports, FULL_ROLLOUT)
        if self.supports:
            out["compatibility"] = dict(self.compatibility)
        return out

    def start_episode(self, episode_id: str) -> None:
        self.episode_id = episode_id
        self._oracle_receipts: dict[tuple[int, str], object] = {}
        self._interventions: dict[tuple[int, str], dict] = {}
        self._referee: dict[tuple[int, str], str] = {}
        self._stage: dict[str, str] = {}
        self._opportunity = -1
        self._log: list[dict] = []
        self._supplied: list[dict] = []  # awaiting the system's first output after supply
        self._seen_log = self._seen_geometry = 0

    # inputs (subscription callbacks) -------------------------------------------
    def on_intervention(self, msg) -> None:
        if msg.episode_id != self.episode_id:
            return
        try:
            payload = json.loads(msg.payload_json)
        except ValueError:
            payload = None
        self._interventions[(int(msg.opportunity_id), msg.site)] = {
            "intervention_id": msg.intervention_id, "mode": "replace" if msg.mode == 1 else "assist",
            "site": msg.site, "opportunity_id": int(msg.opportunity_id),
            "evidence_version": int(msg.evidence_version), "payload": payload}

    def on_oracle_receipt(self, msg) -> None:
        if msg.episode_id == self.episode_id:
            self._oracle_receipts[(int(msg.opportunity_id), _site(msg))] = msg

    def on_referee_receipt(self, msg) -> None:
        if msg.episode_id == self.episode_id:
            self._referee[(int(msg.opportunity_id), _site(msg))] = msg.status

    # the handoff ---------------------------------------------------------------
    def expect(self, opportunity_id: int) -> None:
        self._opportunity = opportunity_id
        self._stage = {s.site: "oracle" for s in self.awaited}

    def ready_to_forward(self) -> list[dict]:
        """Interventions to forward to the referee now (each once)."""
        out = []
        for site, stage in self._stage.items():
            key = (self._opportunity, site)
            if stage != "oracle" or key not in self._oracle_receipts:
                continue
            receipt = self._oracle_receipts[key]
            if receipt.status != "delivered":
                self._stage[site] = "done"
                self._log.append({"site": site, "opportunity_id": self._opportunity, "status": receipt.status,
                                  "detail": json.loads(receipt.detail_json or "{}")})
                continue
            iv = self._interventions.get(key)
            if iv is None or iv["payload"] is None:
                continue  # the intervention itself is still in flight
            self._stage[site] = "referee"
            out.append({"receipt_id": receipt.receipt_id, "payload_id": receipt.payload_id,
                        "opportunity_id": self._opportunity, "evidence_version": iv["evidence_version"],
                        "intervention": iv})
        return out

    def settled(self) -> bool:
        """Apply the referee's verdicts; True once every site is done."""
        for site, stage in self._stage.items():
            key = (self._opportunity, site)
            if stage != "referee" or key not in self._referee:
                continue
            self._stage[site] = "done"
            status, iv = self._referee[key], self._interventions[key]
            if status == "delivered":
                self.system.supply(site, iv["mode"], iv["payload"])
                # A refreshed support supersedes one at the same site still awaiting an output.
                self._supplied = [x for x in self._supplied if x["site"] != site] + [iv]
                # Only decisions and localizations after this delivery show its effect.
                self._seen_log = len(getattr(self.system, "interface_log", None) or ())
                self._seen_geometry = len(getattr(self.system, "geometry_log", None) or ())
            self._log.append({"site": site, "opportunity_id": self._opportunity, "status": status,
                              "intervention_id": iv["intervention_id"], "payload": iv["payload"]})
        return all(stage == "done" for stage in self._stage.values())

    def waiting_for(self) -> dict:
        return {site: stage for site, stage in self._stage.items() if stage != "done"}

    def drain_log(self) -> list[dict]:
        out, self._log = self._log, []
        return out

    def outputs_after_act(self) -> list[dict]:
        """Original and substituted outputs of the first output after each delivery
        at its site (paper 6.3: a Replace keeps and scores the system's own output):
        the next decision for state and decision support, the next localization for
        geometry support. From the system's interface logs when it keeps them."""
        log = getattr(self.system, "interface_log", None)
        if log is None or not self._supplied:
            return []
        new, self._seen_log = log[self._seen_log:], len(log)
        geo = getattr(self.system, "geometry_log", None) or []
        new_geo, self._seen_geometry = geo[self._seen_geometry:], len(geo)
        out, waiting = [], []
        for iv in self._supplied:
            if iv["site"] == "geometry":
                if not new_geo:
                    waiting.append(iv)
                    continue
                own, used = new_geo[0].get("original"), new_geo[0].get("used")
            elif not new:
                waiting.append(iv)
                continue
            elif iv["site"] == "state":
                own, used = new[0].get("state_original"), new[0].get("state_used")
            else:
                own, used = new[0].get("operation_original"), new[0].get("operation_used")
            out.append({"intervention_id": iv["intervention_id"], "site": iv["site"], "mode": iv["mode"],
                        "original_output": own, "substituted_output": used,
                        "first_subsequent_choice": new[0].get("operation_used") if new else None})
        self._supplied = waiting
        return out
