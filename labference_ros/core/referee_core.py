"""What every task family's referee shares (paper 5.3-5.4): the opportunity
book, observation receipts, the explicit-report track, the episode's end,
late inputs, event records and live score snapshots.

The protocol's rules (executions, drops, premature advancement, recovery, the
dwell) are core.protocol's, mixed in. A family's referee subclasses RefereeCore
and adds its recognisers, its task
state (self.z, with evidence_version and physically_complete), its legal set
(legal_set()), step() and check_intervention(). Everything here is
record-for-record what the weighing referee did before this class existed
(the golden records check it). Pure: no clock, no randomness.
"""
from __future__ import annotations

from collections import Counter

from labference_ros.core.external_events import PREMATURE_INTERACTION, ExternalEventWatch
from labference_ros.core.operations import STOP, WAIT_OP, Operation, as_operation
from labference_ros.core.opportunities import Evidence, Opportunity, OpportunityBook
from labference_ros.core.oracle_scope import check_scope, intervention_payload_id
from labference_ros.core.protocol import ProtocolRules
from labference_ros.core.scoring import episode_scores
from labference_ros.core.system import COMMITMENT_SOURCE

STOP_REASONS_EARLY = ("policy_stop", "policy_done")
# Status of a receipt, and reason of a report, received after episode_end: it
# opens no opportunity and changes no score (docs/records.md).
LATE = "late"


class RefereeCore(ProtocolRules):
    def __init__(self, contract, episode_id: str, session_id: str, deadline_s: float | None):
        self.contract = contract
        self.episode_id = episode_id
        self.deadline_s = deadline_s
        self.book = OpportunityBook(contract.opportunities.response_window_s, session_id)
        self.events: list[dict] = []
        self.receipts: list[dict] = []
        self.reports: list[dict] = []
        # The symbolic-commitment track (reports whose source starts with COMMITMENT_SOURCE):
        # opportunity id -> (first committed operation, its time), scored apart from reports.
        self.commitments: dict[int, tuple[Operation, float]] = {}
        self.counts: Counter = Counter()
        self.violations: list[str] = []
        self.errors_outstanding = 0
        self.finished: str | None = None
        # Inputs received after episode_end, by kind. Late measurements are only
        # counted: the world stream keeps flowing until the runner stops it.
        self.late_inputs: Counter = Counter()
        self._seq = 0
        self._last_t: float | None = None
        self._out: list[dict] = []
        # A declared external event at a hidden time (core.external_events), or None.
        self.external: ExternalEventWatch | None = None
        self._protocol_init()

    # what a family provides -----------------------------------------------------
    def legal_set(self) -> tuple[Operation, ...]:
        raise NotImplementedError

    def _on_opened(self, opp: Opportunity, t: float) -> None:
        """An observation delivery just opened `opp` (before its records go out)."""

    def _scores_extra(self, scores: dict) -> None:
        """Add the family's own fields to scores.json."""

    # inputs ---------------------------------------------------------------------
    def _begin_step(self, t: float) -> tuple[list[dict] | None, bool, float]:
        """Before a measurement at t: (records to return instead of stepping, is it the
        first, seconds since the last). After the end it is only counted; past the
        deadline it ends the episode at the last measurement; time never goes back."""
        if self.finished:
            self.late_inputs["measurement"] += 1
            return [], False, 0.0
        if self.deadline_s is not None and t > self.deadline_s + 1e-9:
            return self.finish(self._last_t if self._last_t is not None else t, "deadline")[:-1], False, 0.0
        first = self._last_t is None
        if not first and t < self._last_t - 1e-12:
            raise ValueError(f"measurement time went backwards: {t} < {self._last_t}")
        dt = 0.0 if first else t - self._last_t
        self._last_t = t
        return None, first, dt

    def deliver_observation(self, observation_id: str, t: float, session_id: str | None = None) -> list[dict]:
        """An observation reached the policy. First record returned is the receipt."""
        if self.finished:
            return [self._late_receipt("observation", observation_id, t)]
        status, opp, opened = self.book.deliver(observation_id, t, session_id)
        receipt = {
            "record": "receipt", "episode_id": self.episode_id,
            "receipt_id": f"{self.episode_id}:o{len(self.receipts) + 1:05d}",
            "kind": "observation", "payload_id": observation_id, "t": t, "status": status,
            "opportunity_id": opp.id if opp else -1,
            "evidence_version": self.z.evidence_version, "opened": opened,
        }
        self.receipts.append(receipt)
        self._out.append(receipt)
        if opened:
            self._on_opened(opp, t)
            self._out.append({"record": "opportunity", "episode_id": self.episode_id, "t": t, **opp.to_dict()})
            self._out.append(self._legal_set_record(t, opp))
        return self._flush(t)

    def report_operation(self, operation: Operation | dict, t: float, opportunity_id: int | None = None,
                         evidence_version: int | None = None, source: str = "") -> list[dict]:
        """Explicit operation report (separate track). First record returned is the report.
        Where the contract registers a symbolic-commitment track (report_tracks), a source
        starting with COMMITMENT_SOURCE puts it there instead: the same binding to the
        current opportunity, its own first, scored by the family."""
        op = as_operation(operation)
        commitment = source.startswith(COMMITMENT_SOURCE) and "commitment" in getattr(self.contract,
                                                                                     "report_tracks", ())
        if self.finished:
            return [self._late_report(op, t, source)]
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
        elif (opp.id in self.commitments) if commitment else (opp.first_report is not None):
            reason = "not_first_report"
        scored = reason == ""
        correct = None
        if scored:
            if commitment:
                self.commitments[opp.id] = (op, t)
            else:
                opp.first_report, opp.first_report_t = op, t
            correct = op in opp.legal_set
        report = {
            "record": "report", "episode_id": self.episode_id,
            "report_id": f"{self.episode_id}:r{len(self.reports) + 1:05d}", "t": t,
            "operation": op.to_dict(), "source": source,
            "opportunity_id": opp.id if opp else -1, "evidence_version": self.z.evidence_version,
            # What the reporter asked for (None: not stated), so a replay makes the same call.
            "requested_opportunity_id": opportunity_id, "requested_evidence_version": evidence_version,
            "accepted": True, "scored": scored, "correct": correct, "reason": reason,
        }
        if commitment:
            report["track"] = "commitment"
        self.reports.append(report)
        self._out.append(report)
        current_legal = self.legal_set()
        if op.type == STOP and op not in current_legal and not self.z.physically_complete:
            self._event("early_termination", t, operation=op, opportunity_id=report["opportunity_id"],
                        detail={"source": "report", "legal_set": [o.to_dict() for o in current_legal]})
            self._error()
        return self._flush(t)

    def finish(self, t: float, reason: str = "episode_end") -> list[dict]:
        """End the episode (any reason, including an early stop). Last record: final scores."""
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

    def _late_receipt(self, kind: str, payload_id: str, t: float) -> dict:
        """Receipt of a delivery after episode_end: recorded, never scored."""
        self.late_inputs[kind] += 1
        receipt = {
            "record": "receipt", "episode_id": self.episode_id,
            "receipt_id": f"{self.episode_id}:o{len(self.receipts) + 1:05d}",
            "kind": kind, "payload_id": payload_id, "t": t, "status": LATE,
            "opportunity_id": -1, "evidence_version": self.z.evidence_version, "opened": False,
        }
        self.receipts.append(receipt)
        return receipt

    def _late_report(self, op: Operation, t: float, source: str) -> dict:
        """An operation report after episode_end: not accepted, never scored, no early
        termination; the same answer whether the referee ended itself (completion,
        deadline) or the node's finish service had already returned."""
        self.late_inputs["report"] += 1
        report = {
            "record": "report", "episode_id": self.episode_id,
            "report_id": f"{self.episode_id}:r{len(self.reports) + 1:05d}", "t": t,
            "operation": op.to_dict(), "source": source,
            "opportunity_id": -1, "evidence_version": self.z.evidence_version,
            "accepted": False, "scored": False, "correct": None, "reason": LATE,
        }
        self.reports.append(report)
        return report

    # what recognising families share --------------------------------------------
    def _open_evidence(self, t: float, trigger: str) -> None:
        """The task state as new evidence: the open opportunity closes, the state's legal
        set is published (the next observation delivery opens an opportunity on it)."""
        ev = Evidence(version=self.z.evidence_version, time=t, trigger=trigger,
                      reference_state=self.z.to_dict(), legal_set=self.legal_set())
        for opp in self.book.new_evidence(ev, t):
            self._opportunity_closed(opp)
        self._out.append(self._legal_set_record(t, None))

    def _identify_choice(self, op: Operation, obj: str, t: float, attempt: int) -> tuple[str, Opportunity | None]:
        """A recognised choice at the current opportunity, recorded as an event:
        ("unscored", opp) without delivered evidence or after the window, ("first", opp)
        scored against its legal set, ("revision", opp) a later different choice (the first
        stays the scored one), ("repeat", opp) the first choice again."""
        opp = self.book.current
        if opp is None or opp.evidence_version != self.z.evidence_version or not opp.accepts_choice_at(t):
            reason = "no_delivered_evidence" if opp is None or opp.evidence_version != self.z.evidence_version \
                else "window_closed"
            self._event("choice", t, obj=obj, operation=op, attempt=attempt, opportunity_id=opp.id if opp else -1,
                        detail={"scored": False, "reason": reason})
            return "unscored", opp
        if opp.first_choice is None:
            correct = op in opp.legal_set
            opp.first_choice, opp.first_choice_t, opp.execution = op, t, "pending"
            ev = self._event("choice", t, obj=obj, operation=op, attempt=attempt, opportunity_id=opp.id,
                             evidence_version=opp.evidence_version,
                             detail={"scored": True, "correct": correct,
                                     "legal_set": [o.to_dict() for o in opp.legal_set]})
            opp.first_choice_event = ev["event_id"]
            if not correct:
                self.counts["incorrect_choice"] += 1
                self._error()
            return "first", opp
        if op != opp.first_choice:
            ev = self._event("choice_revision", t, obj=obj, operation=op, attempt=attempt, opportunity_id=opp.id,
                             detail={"correct": op in opp.legal_set})
            opp.revisions.append({"t": t, "operation": op.to_dict(), "event_id": ev["event_id"]})
            return "revision", opp
        return "repeat", opp

    def _scoped_intervention(self, intervention: dict, t: float, sites, *, operation_types=(),
                             hidden_values: dict | None = None, site_checks: dict | None = None) -> list[dict]:
        """Scope-check an Oracle intervention against the open opportunity and the current
        evidence (core.oracle_scope.check_scope with the family's sites, operation types,
        this episode's hidden values and the family's own site checks) and record its
        receipt: delivered | rejected_scope, with the reasons. After the episode's end it
        is late and changes nothing. First record returned: the receipt."""
        if self.finished:
            late = self._late_receipt("intervention", intervention_payload_id(intervention), t)
            # The bridge settles a support by the requested (opportunity, site): echo them.
            late.update(site=intervention.get("site", ""), mode=intervention.get("mode", ""), reasons=[LATE],
                        opportunity_id=intervention.get("opportunity_id", -1),
                        evidence_version=intervention.get("evidence_version", -1))
            return [late]
        opp = self.book.current
        decision = check_scope(
            intervention, sites, current_opportunity_id=opp.id if opp and opp.status == "open" else None,
            current_evidence_version=self.z.evidence_version, legal_set=opp.legal_set if opp else (),
            operation_types=operation_types, hidden_values=hidden_values, site_checks=site_checks)
        receipt = {
            "record": "receipt", "episode_id": self.episode_id,
            "receipt_id": f"{self.episode_id}:o{len(self.receipts) + 1:05d}",
            "kind": "intervention", "payload_id": decision.payload_id, "t": t,
            "status": "delivered" if decision.ok else "rejected_scope",
            "opportunity_id": intervention.get("opportunity_id", -1),
            "evidence_version": intervention.get("evidence_version", -1),
            "site": intervention.get("site", ""), "mode": intervention.get("mode", ""),
            "reasons": list(decision.reasons), "opened": False,
        }
        self.receipts.append(receipt)
        self._out.append(receipt)
        return self._flush(t)

    # external events at hidden times (core.external_events) -----------------------
    def _declare_external_event(self, spec, trigger_t: float) -> None:
        """This episode's condition declares an event the environment causes at trigger_t."""
        self.external = ExternalEventWatch(spec, trigger_t)
        self.counts[PREMATURE_INTERACTION] += 0  # counted (and listed in scores) even when none occur

    @property
    def awaiting_external_event(self) -> bool:
        return self.external is not None and self.external.pending

    def _gated(self, ops: tuple[Operation, ...]) -> tuple[Operation, ...]:
        """The legal set while a declared event is pending is Wait alone; after it, `ops`."""
        return (WAIT_OP,) if self.awaiting_external_event else ops

    def _external_event(self, t: float, detail: dict) -> bool:
        """The environment announced the declared event at t (the first world state after
        it carries its record). True the first time: the family then opens new evidence."""
        if self.external is None:
            self._event("validity", t, detail={"reason": "undeclared external event", "environment": detail})
            return False
        if not self.external.happened(t):
            return False
        self._event("external_event", t, detail={**detail, "trigger_t": self.external.trigger_t})
        return True

    def _watch_premature(self, t: float, touched) -> None:
        """Robot contact with an affected object while the declared event is pending: each
        onset of contact is a premature interaction, a recoverable error."""
        if self.external is None:
            return
        for obj in self.external.contacts(t, touched):
            opp = self.book.current
            self._event(PREMATURE_INTERACTION, t, obj=obj, opportunity_id=opp.id if opp else -1,
                        detail={"event": self.external.spec.name})
            self._error()

    # queries --------------------------------------------------------------------
    @property
    def opportunities(self) -> list[Opportunity]:
        return self.book.all

    def state(self) -> dict:
        return self.z.to_dict()

    def scores(self, t: float | None = None) -> dict:
        s = episode_scores(
            episode_id=self.episode_id, t=self._last_t if t is None else t,
            contract_identity=self.contract.identity(), state=self.z, opportunities=self.book.all,
            counts=self.counts, violations=self.violations, errors_outstanding=self.errors_outstanding,
            finished=self.finished,
        )
        if self.external is not None:
            s["external_event"] = self.external.scores(completed=bool(self.z.physically_complete))
        self._scores_extra(s)
        s["opportunity_records"] = [o.to_dict() for o in self.book.all]
        return s

    def snapshot(self, t: float | None = None) -> dict:
        s = self.scores(t)
        s.pop("opportunity_records")
        return {"record": "score_snapshot", **s}

    # records --------------------------------------------------------------------
    def _legal_set_record(self, t: float, opp: Opportunity | None) -> dict:
        ev = self.book.evidence
        return {"record": "legal_set", "episode_id": self.episode_id, "t": t,
                "opportunity_id": opp.id if opp else -1, "evidence_version": ev.version,
                "trigger": ev.trigger, "operations": [o.to_dict() for o in ev.legal_set],
                "state": ev.reference_state}

    def _opportunity_closed(self, opp: Opportunity) -> None:
        self._event("opportunity_closed", opp.close_time, opportunity_id=opp.id,
                    evidence_version=opp.evidence_version,
                    operation=opp.first_choice,
                    detail={"reason": opp.close_reason, "identified": opp.first_choice is not None,
                            "correct": opp.choice_correct, "native_scorable": opp.native_scorable})

    def _error(self) -> None:
        self.errors_outstanding += 1

    def _event(self, category: str, t: float, *, obj: str = "", operation: Operation | None = None,
               opportunity_id: int = -1, evidence_version: int | None = None, attempt: int = 0,
               measured_value: float | None = None, detail: dict | None = None) -> dict:
        self._seq += 1
        ev = {
            "record": "event", "episode_id": self.episode_id,
            "event_id": f"{self.episode_id}:e{self._seq:06d}", "category": category, "t": t,
            "object": obj, "operation": operation.to_dict() if operation else None,
            "opportunity_id": opportunity_id,
            "evidence_version": self.z.evidence_version if evidence_version is None else evidence_version,
            "attempt": attempt, "measured_value": measured_value, "detail": detail or {},
        }
        self.events.append(ev)
        self.counts[category] += 1
        if category == "choice" and self.external is not None:  # the first after the event is the response
            self.external.choice(t, ev["operation"], ev["detail"].get("correct"), opportunity_id)
        self._out.append(ev)
        return ev

    def _flush(self, t: float) -> list[dict]:
        out, self._out = self._out, []
        if any(r["record"] == "event" for r in out) and not self.finished:
            out.append(self.snapshot(t))
        return out
