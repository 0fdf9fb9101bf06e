"""Referee of one centrifuge-loading episode: recognisers, the insertion
predicate, F and U, opportunities and scoring (paper 4.1, 5, 8.1).

Same inputs and outputs as the weighing referee (tasks/base.py
EpisodeReferee): WorldMeasurement samples in sim-time order, observation
deliveries, explicit reports and Oracle interventions; plain dict records out.
No clock, no randomness.

The scored choice is the insertion destination: the first directed approach
of a held tube toward a slot (recognisers.TubeTracker) is Insert(tube, slot)
at the current opportunity; a grasp of a seated tube is Pick(tube). Its
execution is confirmed when that tube is seated in the chosen slot (the
insertion predicate held 0.5 s); seated elsewhere, or released unseated, is an
execution failure, and the task state follows where the tube actually is.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

from labference_ros.core.measurements import WorldMeasurement
from labference_ros.core.operations import INSERT, STOP, Operation, as_operation, insert, pick
from labference_ros.core.opportunities import Evidence, Opportunity, OpportunityBook
from labference_ros.core.scoring import episode_scores
from labference_ros.tasks.centrifuge import task_state as ts
from labference_ros.tasks.centrifuge.contract import CentrifugeContract
from labference_ros.tasks.centrifuge.insertion import SeatTracker, seat_check
from labference_ros.tasks.centrifuge.instances import CentrifugeInstance
from labference_ros.tasks.centrifuge.recognisers import TubeTracker
from labference_ros.tasks.centrifuge.rotor import slot_frames, slot_index, slot_name

STOP_REASONS_EARLY = ("policy_stop", "policy_done")
LATE = "late"


class Referee:
    def __init__(self, contract: CentrifugeContract, instance: CentrifugeInstance, episode_id: str = "episode",
                 session_id: str = "", deadline_s: float | None = None):
        self.contract, self.instance, self.episode_id = contract, instance, episode_id
        self.deadline_s = deadline_s
        self.frames = slot_frames(contract.rotor, instance.rotor_pose)
        self.z = ts.initial_state(contract, instance.seated)
        self.trackers = {t: TubeTracker(t, contract) for t in contract.tubes}
        self.seats = {t: SeatTracker(contract) for t in contract.tubes}
        self._rest_since: dict[str, float] = {}
        self._unfinished_noted: set[str] = set()
        self.book = OpportunityBook(contract.opportunities.response_window_s, session_id)
        self.events: list[dict] = []
        self.receipts: list[dict] = []
        self.reports: list[dict] = []
        self.counts: Counter = Counter()
        self.violations: list[str] = []
        self.errors_outstanding = 0
        self.finished: str | None = None
        self.late_inputs: Counter = Counter()
        self._executions: dict[str, dict] = {}  # tube -> the identified choice being carried out
        self._seq = 0
        self._last_t: float | None = None
        self._out: list[dict] = []

    # ------------------------------------------------------------------ inputs
    def step(self, m: WorldMeasurement) -> list[dict]:
        if self.finished:
            self.late_inputs["measurement"] += 1
            return []
        if self.deadline_s is not None and m.t > self.deadline_s + 1e-9:
            return self.finish(self._last_t if self._last_t is not None else m.t, "deadline")[:-1]
        first = self._last_t is None
        if not first and m.t < self._last_t - 1e-12:
            raise ValueError(f"measurement time went backwards: {m.t} < {self._last_t}")
        dt = 0.0 if first else m.t - self._last_t
        self._last_t = m.t
        z0 = self.z
        if first:
            self.z = replace(z0, evidence_version=1)
            self._event("episode_start", m.t, detail={"instance_id": self.instance.instance_id,
                                                        "seated": self.z.to_dict()["seated"]})
            self._new_evidence(m.t, "initial_readiness")
            z0 = self.z
        checks = {}
        for tube in self.contract.tubes:
            o = m.objects.get(tube)
            if o is None:
                continue
            for r in self.trackers[tube].step(m, o, self.frames):
                self._recognition(r)
            check = checks[tube] = seat_check(o, self.frames, self.contract)
            slot = self.seats[tube].update(m.t, check)
            if slot is not None and self.z.seated.get(tube) != slot:
                self._seated(tube, slot, m.t)
            elif tube in self.z.seated and not check.seated and self.trackers[tube].grasping \
                    and "deep" not in check.passed:
                self.z = ts.confirm_removed(self.z, tube)
                self._event("tube_removed", m.t, obj=tube)
            self._watch_unfinished(tube, o, check, m.t)
        holds = all(t in checks and checks[t].seated for t in self.contract.tubes)
        self.z = ts.terminal_update(self.contract, self.z, m.t, dt, holds)
        if self.z.evidence_version != z0.evidence_version:
            self._new_evidence(m.t, "confirmed_change")
        for opp in self.book.expire(m.t):
            self._opportunity_closed(opp)
        if self.z.physically_complete and not z0.physically_complete:
            self._event("task_complete", m.t, detail={"seated": self.z.to_dict()["seated"]})
            out = self._flush(m.t)
            return out + self.finish(m.t, "completed")[:-1]
        return self._flush(m.t)

    def deliver_observation(self, observation_id: str, t: float, session_id: str | None = None) -> list[dict]:
        if self.finished:
            return [self._late_receipt("observation", observation_id, t)]
        status, opp, opened = self.book.deliver(observation_id, t, session_id)
        receipt = {"record": "receipt", "episode_id": self.episode_id,
                   "receipt_id": f"{self.episode_id}:o{len(self.receipts) + 1:05d}", "kind": "observation",
                   "payload_id": observation_id, "t": t, "status": status, "opportunity_id": opp.id if opp else -1,
                   "evidence_version": self.z.evidence_version, "opened": opened}
        self.receipts.append(receipt)
        self._out.append(receipt)
        if opened:
            self._out.append({"record": "opportunity", "episode_id": self.episode_id, "t": t, **opp.to_dict()})
            self._out.append(self._legal_set_record(t, opp))
        return self._flush(t)

    def report_operation(self, operation, t: float, opportunity_id: int | None = None,
                         evidence_version: int | None = None, source: str = "") -> list[dict]:
        op = as_operation(operation)
        if self.finished:
            self.late_inputs["report"] += 1
            return [{"record": "report", "episode_id": self.episode_id, "t": t, "operation": op.to_dict(),
                     "source": source, "accepted": False, "scored": False, "correct": None, "reason": LATE}]
        opp = self.book.current
        reason = ""
        if opp is None:
            reason = "no_delivered_evidence"
        elif opportunity_id is not None and opportunity_id != opp.id:
            reason = "stale_opportunity"
        elif evidence_version is not None and evidence_version != opp.evidence_version:
            reason = "stale_evidence"
        elif not opp.accepts_choice_at(t):
            reason = "window_closed"
        elif opp.first_report is not None:
            reason = "not_first_report"
        scored = reason == ""
        correct = None
        if scored:
            opp.first_report, opp.first_report_t = op, t
            correct = op in opp.legal_set
        report = {"record": "report", "episode_id": self.episode_id,
                  "report_id": f"{self.episode_id}:r{len(self.reports) + 1:05d}", "t": t,
                  "operation": op.to_dict(), "source": source, "opportunity_id": opp.id if opp else -1,
                  "evidence_version": self.z.evidence_version, "requested_opportunity_id": opportunity_id,
                  "requested_evidence_version": evidence_version, "accepted": True, "scored": scored,
                  "correct": correct, "reason": reason}
        self.reports.append(report)
        self._out.append(report)
        if op.type == STOP and not self.z.physically_complete:
            self._event("early_termination", t, operation=op, detail={"source": "report"})
            self._error()
        return self._flush(t)

    def check_intervention(self, intervention: dict, t: float) -> list[dict]:
        """Scope check: bound to the open opportunity and the current evidence; a
        decision must carry one legal operation (evaluator facts never leave)."""
        opp = self.book.current
        reasons = []
        if self.finished:
            reasons.append(LATE)
        elif opp is None or opp.status != "open" or intervention.get("opportunity_id") != opp.id:
            reasons.append("stale_opportunity")
        elif intervention.get("evidence_version") != self.z.evidence_version:
            reasons.append("stale_evidence_version")
        payload = intervention.get("payload") or {}
        hidden = set(self.contract.diagnostics.hidden_keys) & set(payload if isinstance(payload, dict) else {})
        if hidden:
            reasons.append("hidden_keys:" + ",".join(sorted(hidden)))
        if intervention.get("site") == "decision" and not reasons:
            try:
                op = as_operation(payload.get("operation") or {})
            except (KeyError, ValueError, TypeError):
                op = None
            if op is None or op not in opp.legal_set:
                reasons.append("operation_not_legal")
        receipt = {"record": "receipt", "episode_id": self.episode_id,
                   "receipt_id": f"{self.episode_id}:o{len(self.receipts) + 1:05d}", "kind": "intervention",
                   "payload_id": str(intervention.get("intervention_id", "")), "t": t,
                   "status": LATE if self.finished else ("delivered" if not reasons else "rejected_scope"),
                   "opportunity_id": intervention.get("opportunity_id", -1),
                   "evidence_version": intervention.get("evidence_version", -1),
                   "site": intervention.get("site", ""), "mode": intervention.get("mode", ""),
                   "reasons": reasons, "opened": False}
        self.receipts.append(receipt)
        if self.finished:
            self.late_inputs["intervention"] += 1
            return [receipt]
        self._out.append(receipt)
        return self._flush(t)

    def finish(self, t: float, reason: str = "episode_end") -> list[dict]:
        if self.finished:
            return [{"record": "scores", **self.scores()}]
        if reason in STOP_REASONS_EARLY and not self.z.physically_complete:
            self._event("early_termination", t, detail={"source": reason})
            self._error()
        for opp in self.book.close_all(t, "episode_end"):
            self._opportunity_closed(opp)
        self.finished = reason
        self._event("episode_end", t, detail={"reason": reason})
        out = self._flush(t)
        out.append({"record": "scores", **self.scores(t)})
        return out

    # ----------------------------------------------------------------- queries
    @property
    def opportunities(self) -> list[Opportunity]:
        return self.book.all

    def legal_set(self) -> tuple[Operation, ...]:
        return ts.legal_set(self.contract, self.z)

    def scores(self, t: float | None = None) -> dict:
        s = episode_scores(episode_id=self.episode_id, t=self._last_t if t is None else t,
                           contract_identity=self.contract.identity(), state=self.z, opportunities=self.book.all,
                           counts=self.counts, violations=self.violations,
                           errors_outstanding=self.errors_outstanding, finished=self.finished)
        s["seated"] = self.z.to_dict()["seated"]
        s["first_intended_slot"] = self.z.to_dict()["first_intended_slot"]
        s["opportunity_records"] = [o.to_dict() for o in self.book.all]
        return s

    # ---------------------------------------------------------------- internals
    def _recognition(self, r: dict) -> None:
        cat, t, tube = r["category"], r["t"], r["object"]
        if cat == "insertion_attempt":
            op = insert(tube, slot_name(r["slot"]))
            self.z = ts.note_attempt(self.z, tube, r["slot"])
            self._choice(op, tube, t, r["attempt"])
        elif cat == "grasp" and tube in self.z.seated:
            self._choice(pick(tube), tube, t, r["attempt"])
        else:
            self._event(cat, t, obj=tube, attempt=r["attempt"])
            if cat == "grasp":
                self._unfinished_noted.discard(tube)

    def _choice(self, op: Operation, tube: str, t: float, attempt: int) -> None:
        opp = self.book.current
        execution = {"operation": op, "opportunity_id": -1, "t": t, "first": False}
        if opp is None or opp.evidence_version != self.z.evidence_version or not opp.accepts_choice_at(t):
            reason = "no_delivered_evidence" if opp is None or opp.evidence_version != self.z.evidence_version \
                else "window_closed"
            self._event("choice", t, obj=tube, operation=op, attempt=attempt, opportunity_id=opp.id if opp else -1,
                        detail={"scored": False, "reason": reason})
        elif opp.first_choice is None:
            correct = op in opp.legal_set
            opp.first_choice, opp.first_choice_t, opp.execution = op, t, "pending"
            ev = self._event("choice", t, obj=tube, operation=op, attempt=attempt, opportunity_id=opp.id,
                             evidence_version=opp.evidence_version,
                             detail={"scored": True, "correct": correct,
                                     "legal_set": [o.to_dict() for o in opp.legal_set]})
            opp.first_choice_event = ev["event_id"]
            execution.update(opportunity_id=opp.id, first=True)
            if not correct:
                self.counts["incorrect_choice"] += 1
                self._error()
        elif op != opp.first_choice:
            ev = self._event("choice_revision", t, obj=tube, operation=op, attempt=attempt, opportunity_id=opp.id,
                             detail={"correct": op in opp.legal_set})
            opp.revisions.append({"t": t, "operation": op.to_dict(), "event_id": ev["event_id"]})
            execution["opportunity_id"] = opp.id
        else:
            execution.update(opportunity_id=opp.id, first=True)
        self._executions[tube] = execution

    def _seated(self, tube: str, slot: int, t: float) -> None:
        self.z = ts.confirm_seated(self.z, tube, slot)
        self._event("insertion_confirmed", t, obj=tube, detail={"slot": slot_name(slot)})
        self._execution_outcome(tube, t, seated_slot=slot)
        if self.errors_outstanding and ts.opposite_pair(self.contract, self.z):
            self._event("recovery", t, obj=tube, detail={"resolved_errors": self.errors_outstanding})
            self.errors_outstanding = 0

    def _watch_unfinished(self, tube: str, o, check, t: float) -> None:
        """A tube released near the rotor that came to rest without being seated
        (shallow, tilted, on the rim) leaves its placement unfinished."""
        resting = check.slot is not None and not check.seated and "released" in check.passed \
            and "still" in check.passed and tube not in self.z.seated and not self.trackers[tube].grasping
        if not resting or tube in self._unfinished_noted:
            self._rest_since.pop(tube, None) if not resting else None
            return
        since = self._rest_since.setdefault(tube, t)
        if t - since >= self.contract.insertion.dwell_s - 1e-9:
            self._unfinished_noted.add(tube)
            self.z = ts.confirm_unfinished(self.z, tube, check.slot)
            self._event("insertion_unfinished", t, obj=tube,
                        detail={"slot": slot_name(check.slot), "failures": list(check.failures)})
            self._execution_outcome(tube, t, seated_slot=None)

    def _execution_outcome(self, tube: str, t: float, seated_slot: int | None) -> None:
        ex = self._executions.pop(tube, None)
        if ex is None:
            return
        op: Operation = ex["operation"]
        ok = op.type == INSERT and seated_slot is not None and slot_index(op.destination) == seated_slot
        self._event("execution_confirmed" if ok else "execution_failure", t, obj=tube, operation=op,
                    opportunity_id=ex["opportunity_id"],
                    detail={"seated_in": None if seated_slot is None else slot_name(seated_slot)})
        if not ok:
            self._error()
        opp = self.book.get(ex["opportunity_id"]) if ex["first"] else None
        if opp is not None and opp.first_choice == op and opp.execution != "failed":
            opp.execution = "confirmed" if ok else "failed"

    def _new_evidence(self, t: float, trigger: str) -> None:
        ops = ts.legal_set(self.contract, self.z)
        ev = Evidence(version=self.z.evidence_version, time=t, trigger=trigger,
                      reference_state=self.z.to_dict(), legal_set=ops)
        for opp in self.book.new_evidence(ev, t):
            self._opportunity_closed(opp)
        self._out.append(self._legal_set_record(t, None))

    def _legal_set_record(self, t: float, opp: Opportunity | None) -> dict:
        ev = self.book.evidence
        return {"record": "legal_set", "episode_id": self.episode_id, "t": t,
                "opportunity_id": opp.id if opp else -1, "evidence_version": ev.version, "trigger": ev.trigger,
                "operations": [o.to_dict() for o in ev.legal_set], "state": ev.reference_state}

    def _opportunity_closed(self, opp: Opportunity) -> None:
        self._event("opportunity_closed", opp.close_time, opportunity_id=opp.id,
                    evidence_version=opp.evidence_version, operation=opp.first_choice,
                    detail={"reason": opp.close_reason, "identified": opp.first_choice is not None,
                            "correct": opp.choice_correct, "native_scorable": opp.native_scorable})

    def _late_receipt(self, kind: str, payload_id: str, t: float) -> dict:
        self.late_inputs[kind] += 1
        receipt = {"record": "receipt", "episode_id": self.episode_id,
                   "receipt_id": f"{self.episode_id}:o{len(self.receipts) + 1:05d}", "kind": kind,
                   "payload_id": payload_id, "t": t, "status": LATE, "opportunity_id": -1,
                   "evidence_version": self.z.evidence_version, "opened": False}
        self.receipts.append(receipt)
        return receipt

    def _error(self) -> None:
        self.errors_outstanding += 1

    def _event(self, category: str, t: float, *, obj: str = "", operation: Operation | None = None,
               opportunity_id: int = -1, evidence_version: int | None = None, attempt: int = 0,
               detail: dict | None = None) -> dict:
        self._seq += 1
        ev = {"record": "event", "episode_id": self.episode_id, "event_id": f"{self.episode_id}:e{self._seq:06d}",
              "category": category, "t": t, "object": obj, "operation": operation.to_dict() if operation else None,
              "opportunity_id": opportunity_id,
              "evidence_version": self.z.evidence_version if evidence_version is None else evidence_version,
              "attempt": attempt, "measured_value": None, "detail": detail or {}}
        self.events.append(ev)
        self.counts[category] += 1
        self._out.append(ev)
        return ev

    def _flush(self, t: float) -> list[dict]:
        out, self._out = self._out, []
        if any(r["record"] == "event" for r in out) and not self.finished:
            out.append({"record": "score_snapshot", **{k: v for k, v in self.scores(t).items()
                                                       if k != "opportunity_records"}})
        return out
