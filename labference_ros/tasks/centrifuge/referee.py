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

from dataclasses import replace

from labference_ros.core.measurements import WorldMeasurement
from labference_ros.core.operations import INSERT, Operation, as_operation, insert, pick
from labference_ros.core.referee_core import LATE, RefereeCore
from labference_ros.tasks.centrifuge import task_state as ts
from labference_ros.tasks.centrifuge.contract import CentrifugeContract
from labference_ros.tasks.centrifuge.insertion import SeatTracker, seat_check
from labference_ros.tasks.centrifuge.instances import CentrifugeInstance
from labference_ros.tasks.centrifuge.recognisers import TubeTracker
from labference_ros.tasks.centrifuge.rotor import slot_frames, slot_index, slot_name



class Referee(RefereeCore):
    def __init__(self, contract: CentrifugeContract, instance: CentrifugeInstance, episode_id: str = "episode",
                 session_id: str = "", deadline_s: float | None = None):
        super().__init__(contract, episode_id, session_id, deadline_s)
        self.instance = instance
        self.frames = slot_frames(contract.rotor, instance.rotor_pose)
        self.z = ts.initial_state(contract, instance.seated)
        self.trackers = {t: TubeTracker(t, contract) for t in contract.tubes}
        self.seats = {t: SeatTracker(contract) for t in contract.tubes}
        self._rest_since: dict[str, float] = {}
        self._unfinished_noted: set[str] = set()
        self._executions: dict[str, dict] = {}  # tube -> the identified choice being carried out

    # ------------------------------------------------------------------ inputs
    def step(self, m: WorldMeasurement) -> list[dict]:
        ended, first, dt = self._begin_step(m.t)
        if ended is not None:
            return ended
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
        return self._intervention_receipt(intervention, t, reasons)

    # ----------------------------------------------------------------- queries
    def legal_set(self) -> tuple[Operation, ...]:
        return ts.legal_set(self.contract, self.z)

    def _scores_extra(self, scores: dict) -> None:
        state = self.z.to_dict()
        scores["seated"] = state["seated"]  # where the tubes actually are
        scores["first_intended_slot"] = state["first_intended_slot"]  # where the first one was aimed

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
        kind, opp = self._identify_choice(op, tube, t, attempt)
        self._executions[tube] = {"operation": op, "opportunity_id": -1 if kind == "unscored" else opp.id, "t": t,
                                  "first": kind in ("first", "repeat")}

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
        self._open_evidence(t, trigger)
