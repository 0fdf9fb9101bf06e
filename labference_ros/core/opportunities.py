"""Decision opportunities (paper 5.3).

An opportunity opens when new relevant evidence (an evidence version) reaches
the policy, i.e. at the first observation delivered at or after the event that
produced it. Repeated deliveries of unchanged evidence keep the same id; an
observation captured before the latest confirmed change is stale and opens
nothing. The first identifiable choice is frozen; revisions keep their times.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .operations import Operation

_EPS = 1e-9


@dataclass
class Opportunity:
    id: int
    evidence_version: int
    trigger: str  # initial_readiness | confirmed_change | failed_attempt
    event_time: float
    delivered_observation_id: str
    delivery_time: float
    response_window_s: float
    session_id: str
    reference_state: dict
    legal_set: tuple  # of Operation
    status: str = "open"  # open | closed
    close_reason: str = ""  # superseded | window_expired | episode_end
    close_time: float | None = None
    queries: int = 1
    first_choice: Operation | None = None
    first_choice_t: float | None = None
    first_choice_event: str = ""
    revisions: list = field(default_factory=list)
    first_report: Operation | None = None
    first_report_t: float | None = None
    execution: str | None = None  # pending | confirmed | failed (of the first choice)

    @property
    def deadline(self) -> float:
        return self.delivery_time + self.response_window_s

    @property
    def native_scorable(self) -> bool:
        """In the native (action-only) population: a physical operation is legal."""
        return any(op.physical for op in self.legal_set)

    @property
    def choice_correct(self) -> bool | None:
        return None if self.first_choice is None else self.first_choice in self.legal_set

    @property
    def report_correct(self) -> bool | None:
        return None if self.first_report is None else self.first_report in self.legal_set

    def accepts_choice_at(self, t: float) -> bool:
        return self.status == "open" and self.delivery_time - _EPS <= t <= self.deadline + _EPS

    def to_dict(self) -> dict:
        return {
            "opportunity_id": self.id,
            "evidence_version": self.evidence_version,
            "trigger": self.trigger,
            "event_time": self.event_time,
            "delivered_observation_id": self.delivered_observation_id,
            "delivery_time": self.delivery_time,
            "response_window_s": self.response_window_s,
            "deadline": self.deadline,
            "session_id": self.session_id,
            "reference_state": self.reference_state,
            "legal_set": [op.to_dict() for op in self.legal_set],
            "native_scorable": self.native_scorable,
            "status": self.status,
            "close_reason": self.close_reason,
            "close_time": self.close_time,
            "queries": self.queries,
            "first_choice": self.first_choice.to_dict() if self.first_choice else None,
            "first_choice_t": self.first_choice_t,
            "first_choice_event": self.first_choice_event,
            "choice_correct": self.choice_correct,
            "revisions": list(self.revisions),
            "first_report": self.first_report.to_dict() if self.first_report else None,
            "first_report_t": self.first_report_t,
            "report_correct": self.report_correct,
            "execution": self.execution,
        }


@dataclass(frozen=True)
class Evidence:
    version: int
    time: float
    trigger: str
    reference_state: dict
    legal_set: tuple


class OpportunityBook:
    def __init__(self, response_window_s: float, session_id: str = ""):
        self.window = response_window_s
        self.session_id = session_id
        self.evidence: Evidence | None = None
        self.current: Opportunity | None = None  # opportunity of the current evidence, if delivered
        self.all: list[Opportunity] = []

    def new_evidence(self, ev: Evidence, t: float) -> list[Opportunity]:
        """Register a new evidence version; closes the previous opportunity."""
        closed = []
        if self.current is not None and self.current.status == "open":
            self._close(self.current, t, "superseded")
            closed.append(self.current)
        self.current = None
        self.evidence = ev
        return closed

    def deliver(self, observation_id: str, t: float, session_id: str | None = None):
        """Returns (status, opportunity or None, opened_now)."""
        ev = self.evidence
        if ev is None:
            return "no_evidence", None, False
        if t < ev.time - _EPS:
            return "stale", None, False
        if self.current is not None and self.current.evidence_version == ev.version:
            self.current.queries += 1
            return "delivered", self.current, False
        opp = Opportunity(
            id=len(self.all) + 1, evidence_version=ev.version, trigger=ev.trigger, event_time=ev.time,
            delivered_observation_id=observation_id, delivery_time=t, response_window_s=self.window,
            session_id=self.session_id if session_id is None else session_id,
            reference_state=ev.reference_state, legal_set=ev.legal_set,
        )
        self.all.append(opp)
        self.current = opp
        return "delivered", opp, True

    def expire(self, t: float) -> list[Opportunity]:
        opp = self.current
        if opp is not None and opp.status == "open" and t > opp.deadline + _EPS:
            self._close(opp, t, "window_expired")
            return [opp]
        return []

    def close_all(self, t: float, reason: str) -> list[Opportunity]:
        opp = self.current
        if opp is not None and opp.status == "open":
            self._close(opp, t, reason)
            return [opp]
        return []

    def get(self, opportunity_id: int) -> Opportunity | None:
        if 1 <= opportunity_id <= len(self.all):
            return self.all[opportunity_id - 1]
        return None

    @staticmethod
    def _close(opp: Opportunity, t: float, reason: str) -> None:
        opp.status, opp.close_reason, opp.close_time = "closed", reason, t
