"""The evaluation protocol every family's referee follows (paper 4.1, 5.3-5.4, 7.2).

A family declares only its predicates and thresholds: what "seated", "on the
pan" or "retrieved" means, which objects a placement concerns, how long a
confirmation or terminal window lasts (its contract). The rules that turn those
predicates into records are here, once:

  execution      an identified choice is carried out; its outcome is confirmed
                 (the placement predicate held where the operation puts the object)
                 or a failure of a named kind (FAILURE_KINDS). A first choice that
                 failed stays failed, whatever a later attempt achieves: a correct
                 target followed by a dropped object receives choice credit and an
                 execution failure (5.3).
  release watch  after a chosen object left the hand: a regrasp before it came to
                 rest is an adjustment; a regrasp after it rested away from its
                 destination ends the attempt as a drop; at rest for the
                 confirmation dwell without the placement predicate, the placement
                 failed (dropped elsewhere, or unfinished where it was put, 4.1).
  premature advancement
                 acting on another object while a placement is unfinished or
                 unconfirmed (4.1: "the robot must complete that placement before
                 advancing").
  unnecessary repetition, early termination (referee_core), recovery
                 every recoverable error or operation failure is outstanding until
                 the family's state confirms progress that resolves it, or the task
                 completes; recovered completion needs that resolution (7.2).
  dwell          a continuous window is measured from the first sample at which
                 its predicate holds (that sample is 0 s) and completes when it
                 has held for exactly the registered duration (8.1).

Pure: no clock, no randomness. The mixin's methods write through the
referee's own _event/_error and its opportunity book.
"""
from __future__ import annotations

from dataclasses import dataclass

from labference_ros.core.operations import Operation

# Dwell comparisons tolerate float summation of the sample period, nothing more.
DWELL_EPS_S = 1e-9

# Kinds of execution failure a record names (detail "failure").
DROP = "drop"  # left the hand and came to rest away from its destination
SLIP = "slip"  # a confirmed removal undone: the object fell back
UNFINISHED = "unfinished"  # released (or let go) at its destination without the placement predicate
OTHER_DESTINATION = "other_destination"  # the predicate held, at another destination than the chosen one
RELEASED_OUTSIDE = "released_outside_region"  # delivered, at rest outside the registered region
WRONG_OBJECT = "wrong_object"  # the operation took another object than the chosen one
FAILURE_KINDS = (DROP, SLIP, UNFINISHED, OTHER_DESTINATION, RELEASED_OUTSIDE, WRONG_OBJECT)


def dwell_step(holding: bool, dwell_s: float, dt: float, holds: bool) -> tuple[bool, float]:
    """One sample of a continuous window: (holding, seconds held). The first sample
    at which the predicate holds starts the window at 0 s; any break resets it."""
    if not holds:
        return False, 0.0
    if not holding:
        return True, 0.0
    return True, dwell_s + dt


def dwell_complete(dwell_s: float, required_s: float) -> bool:
    """The window has held for the registered duration."""
    return dwell_s >= required_s - DWELL_EPS_S


@dataclass
class ReleaseWatch:
    """A chosen object after it left the hand: when it came to rest, and whether it
    ever rested away from its destination."""

    released_t: float
    rest_since: float | None = None
    rested_away: bool = False

    def step(self, t: float, at_rest: bool, on_destination: bool) -> float:
        """Seconds at rest (untouched and still) so far; 0 while moving."""
        if not at_rest:
            self.rest_since = None
            return 0.0
        if self.rest_since is None:
            self.rest_since = t
        if not on_destination:
            self.rested_away = True
        return t - self.rest_since


class ProtocolRules:
    """The protocol's rules, mixed into RefereeCore. The referee provides book,
    errors_outstanding, _event and _error; executions and release watches live here."""

    def _protocol_init(self) -> None:
        self._executions: dict[str, dict] = {}  # key (an object, or a named choice) -> its execution
        self._released: dict[str, ReleaseWatch] = {}  # key -> its release watch

    # executions ----------------------------------------------------------------
    def _begin_execution(self, key: str, op: Operation, opportunity_id: int, t: float, first: bool,
                         **extra) -> dict:
        """The identified choice `op` is being carried out (first: it is the scored
        choice of its opportunity, or its repetition)."""
        ex = {"operation": op, "opportunity_id": opportunity_id, "t": t, "first": first, **extra}
        self._executions[key] = ex
        self._released.pop(key, None)
        return ex

    def _first_choice_opportunities(self, ex: dict) -> list:
        """The opportunity whose first choice this execution carries out (at most one)."""
        opp = self.book.get(ex["opportunity_id"]) if ex["first"] else None
        return [opp] if opp is not None and opp.first_choice == ex["operation"] else []

    def _settle_execution(self, key: str, t: float, ok: bool, *, obj: str | None = None, attempt: int = 0,
                          measured_value: float | None = None, detail: dict | None = None,
                          failure: str | None = None) -> dict | None:
        """The outcome of the pending execution under `key`: execution_confirmed, or an
        execution_failure (a recoverable error) of kind `failure`. A first choice that
        failed stays failed. Returns the execution, or None when none was pending."""
        ex = self._executions.pop(key, None)
        self._released.pop(key, None)
        if ex is None:
            return None
        op: Operation = ex["operation"]
        detail = dict(detail or {})
        if not ok and failure is not None:
            detail["failure"] = failure
        self._event("execution_confirmed" if ok else "execution_failure", t, obj=op.object if obj is None else obj,
                    operation=op, attempt=attempt, opportunity_id=ex["opportunity_id"],
                    measured_value=measured_value, detail=detail)
        if not ok:
            self._error()
        for opp in self._first_choice_opportunities(ex):
            if opp.execution != "failed":
                opp.execution = "confirmed" if ok else "failed"
        return ex

    def _undo_execution(self, ex: dict, t: float, failure: str, *, obj: str, detail: dict | None = None) -> None:
        """A confirmed outcome undone (a removal that slipped back): an execution
        failure of its own, and the first choice it carried out counts as failed."""
        op: Operation = ex["operation"]
        self._event("execution_failure", t, obj=obj, operation=op, opportunity_id=ex["opportunity_id"],
                    detail={**(detail or {}), "failure": failure, "undoes_confirmation_at": ex.get("confirmed_t")})
        self._error()
        for opp in self._first_choice_opportunities(ex):
            opp.execution = "failed"

    # the release watch ----------------------------------------------------------
    def _note_released(self, key: str, t: float) -> None:
        """The object of a pending execution left the hand at t."""
        if key in self._executions:
            self._released[key] = ReleaseWatch(t)

    def _watch_release(self, key: str, t: float, *, at_rest: bool, on_destination: bool, dwell_s: float) -> bool:
        """One sample of a released object: True once it has rested for the
        confirmation dwell (the family then settles the execution: its placement
        predicate did not hold, or it would have been confirmed already)."""
        watch = self._released.get(key)
        if watch is None:
            return False
        return dwell_complete(watch.step(t, at_rest, on_destination), dwell_s)

    def _regrasp_ends_attempt(self, key: str) -> ReleaseWatch | None:
        """A regrasp of a released object: its release watch when the attempt that ended
        was a drop (it came to rest away from its destination); None for a regrasp
        before it came to rest, or after it rested on its destination (an adjustment)."""
        watch = self._released.pop(key, None)
        return watch if watch is not None and watch.rested_away else None

    # protocol events --------------------------------------------------------------
    def _premature_advancement(self, t: float, obj: str, op: Operation | None, reason: str,
                               opportunity_id: int = -1) -> None:
        """Acting before the previous placement is confirmed (4.1, 5.4)."""
        self._event("premature_advancement", t, obj=obj, operation=op, opportunity_id=opportunity_id,
                    detail={"reason": reason})
        self._error()

    def _unnecessary_repetition(self, t: float, obj: str, op: Operation | None, attempt: int, detail: dict) -> None:
        """Redoing an operation whose outcome is already confirmed (5.4)."""
        self._event("unnecessary_repetition", t, obj=obj, operation=op, attempt=attempt, detail=detail)
        self._error()

    def _resolve_errors(self, t: float, obj: str, by: str) -> None:
        """Confirmed progress resolves every outstanding recoverable error (7.2)."""
        if self.errors_outstanding > 0:
            self._event("recovery", t, obj=obj, detail={"resolved_errors": self.errors_outstanding, "by": by})
            self.errors_outstanding = 0
