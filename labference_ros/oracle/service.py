"""Topic-side Oracle logic, kept free of ROS so it is testable: bind one
support condition to each opportunity the referee opens, build its payloads
from authorized facts only and check scope with the shared check
(core.oracle_scope) and the family's own site checks.

Everything a payload needs arrives in the opportunity's legal-set message
(the referee publishes it when the opportunity opens): the legal set for the
decision rule, and the reference state whose stable reading is what the
balance display showed at that evidence version. Taking the displayed load
from that message, not from whichever /balance/reading arrived last, makes
the payload a function of the evidence version alone, so a full-rollout run
is reproducible. Geometry Assist supplies every standard's frame from the
evaluator's world state stamped with that opportunity's sim time; an
opportunity waits until that world state has arrived. Every support gets a
receipt at every opportunity, even when it cannot be built (status
"no_facts"), so the policy bridge can wait for a definite answer before the
tested system acts."""
from __future__ import annotations

import itertools
import json

from labference_ros.core.input_merge import key
from labference_ros.core.operations import Operation
from labference_ros.core.oracle_scope import check_scope, payload_id
from labference_ros.tasks import DEFAULT_FAMILY
from labference_ros.tasks import family as task_family

from .supports import condition_name, parse_launch_support

# Replace at geometry and skill needs a hook at the system's output (the in-process protocol).
TOPIC_SUPPORTS = ("assist:state", "replace:state", "assist:decision", "replace:decision", "assist:geometry")
NO_FACTS = "no_facts"
KEEP_WORLDS = 200  # world states kept for opportunities still to come (2 s of sim time)


def topic_supports(condition: str):
    """Supports of a launch-argument condition; refuses those topics cannot serve."""
    supports = parse_launch_support(condition)
    bad = [str(s) for s in supports if str(s) not in TOPIC_SUPPORTS]
    if bad:
        raise ValueError(f"supports {bad} cannot be delivered over topics (only {', '.join(TOPIC_SUPPORTS)}); "
                         "use the in-process protocol (labference diagnose-oracle)")
    return supports


class OracleService:
    def __init__(self, condition: str, task_condition: str = "basic", task: str = DEFAULT_FAMILY):
        self.supports = topic_supports(condition)
        self.name = condition_name(self.supports)
        self.family = task_family(task)
        self.contract = self.family.contract_for(task_condition)
        self.episode_id = ""
        self._sent: set[tuple[int, str]] = set()
        self._ids = itertools.count(1)
        self.needs_world = any(s.site == "geometry" for s in self.supports)
        self._frames: dict[int, list[dict]] = {}  # stamp key -> standard frames
        self._waiting: list[tuple] = []  # opportunities whose world state has not arrived yet

    def on_world(self, t: float, objects) -> list[tuple[dict | None, dict]]:
        """An evaluator world state; answers opportunities that waited for it."""
        if not self.needs_world:
            return []
        if self._frames and key(t) < max(self._frames):
            self._frames.clear()  # sim time went back: the simulator was reset for a new episode
        self._frames[key(t)] = self.family.geometry_frames(objects)
        while len(self._frames) > KEEP_WORLDS:
            del self._frames[min(self._frames)]
        ready = [w for w in self._waiting if key(w[5]) in self._frames]
        self._waiting = [w for w in self._waiting if key(w[5]) not in self._frames]
        return [r for w in ready for r in self.on_opportunity_legal_set(*w)]

    def on_opportunity_legal_set(self, episode_id: str, opportunity_id: int, evidence_version: int,
                                 operations, state: dict, t: float = 0.0) -> list[tuple[dict | None, dict]]:
        """(intervention or None, receipt) per support for a newly opened opportunity
        at sim time t. Legal sets not bound to an opportunity (id < 0) and repeats
        give nothing; with geometry support an opportunity waits for its world state."""
        if opportunity_id < 0 or not self.supports:
            return []
        if episode_id != self.episode_id:  # a new episode: ids, bindings and frames restart
            self.episode_id, self._sent, self._ids = episode_id, set(), itertools.count(1)
            self._waiting = [w for w in self._waiting if w[0] == episode_id]
        if self.needs_world and key(t) not in self._frames:
            self._waiting.append((episode_id, opportunity_id, evidence_version, tuple(operations), state, t))
            return []
        ops = tuple(operations)
        frames = self._frames.get(key(t))
        out = []
        for s in self.supports:
            if (opportunity_id, s.site) in self._sent:
                continue
            self._sent.add((opportunity_id, s.site))
            payload = self._payload(s.site, ops, state or {}, frames)
            iid = f"{episode_id}:i{next(self._ids):05d}"
            iv = {"mode": s.mode, "site": s.site, "opportunity_id": int(opportunity_id),
                  "evidence_version": int(evidence_version), "payload": payload or {},
                  "episode_id": episode_id, "intervention_id": iid}
            if payload is None:
                status, reasons = NO_FACTS, ["no_certified_facts_at_this_opportunity"]
            else:
                d = check_scope(iv, self.contract.diagnostics, current_opportunity_id=int(opportunity_id),
                                current_evidence_version=int(evidence_version), legal_set=ops,
                                operation_types=self.contract.operation_types,
                                site_checks=self.family.oracle_site_checks(self.contract))
                status, reasons = ("delivered" if d.ok else "rejected_scope"), list(d.reasons)
            receipt = {"episode_id": episode_id, "receipt_id": iid, "kind": "intervention", "stamp": float(t),
                       "payload_id": payload_id(payload or {}), "opportunity_id": int(opportunity_id),
                       "evidence_version": int(evidence_version), "status": status,
                       "original_output_json": "", "substituted_output_json": json.dumps(payload or {}),
                       "detail_json": json.dumps({"site": s.site, "mode": s.mode, "reasons": reasons})}
            out.append((iv if status == "delivered" else None, receipt))
        return out

    def _payload(self, site: str, ops: tuple[Operation, ...], state: dict, frames) -> dict | None:
        if site == "geometry":
            return {"candidates": frames} if frames else None
        if site == "state":
            # Only what the display certified: the stable reading and its indicator.
            if not state.get("reading_ready") or state.get("last_stable_reading_g") is None:
                return None
            return {"displayed_g": float(state["last_stable_reading_g"]), "stable": True}
        op = self.family.decision_rule(ops)
        return None if op is None else {"operation": op.to_dict()}
