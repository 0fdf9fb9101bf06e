"""Referee: THE physical-event scorer of one weighing episode.

Inputs (in sim-time order; a measurement at t is stepped before observations
delivered at t): WorldMeasurement samples, observation-delivery notices and
optional explicit operation reports. Outputs: plain dict records (schema in
docs/records.md) -- events, opportunities, legal sets, receipts, reports and
score snapshots. The online node and the offline replay audit both drive this
class; it reads no clock and no randomness, so equal inputs give equal outputs.
"""
from __future__ import annotations

import math
from dataclasses import replace

from labference_ros.core.external_events import ENVIRONMENT_KEY, EVIDENCE_TRIGGER
from labference_ros.core.measurements import PAN, WorldMeasurement
from labference_ros.core.operations import Operation
from labference_ros.core.opportunities import Evidence, Opportunity
from labference_ros.core.protocol import DROP, RELEASED_OUTSIDE
from labference_ros.core.referee_core import RefereeCore
from labference_ros.tasks.weighing.contract import TaskContract
from labference_ros.tasks.weighing.instance import WeighingInstance
from labference_ros.tasks.weighing.objects import SAMPLE, STANDARD_MASSES_G, STANDARDS
from labference_ros.tasks.weighing.oracle_scope import WEIGHING_OPERATION_TYPES, site_checks
from labference_ros.tasks.weighing.recognisers import (S_AMBIGUOUS, S_NONE, S_PAN, S_TABLE, MeasurementView,
                                                      ObjectTracker, location_of, still, touches_location,
                                                      view_of)
from labference_ros.core.operations import add, remove
from labference_ros.tasks.weighing.task_state import (ELSEWHERE, ConfirmedEvent, Goal, PhysicalEvidence, initial_state,
                                                      legal_set, operation_for_grasp, relation_satisfied, update)

# An opportunity that opens while an object is held takes its choice from that
# object's touchdown at least this far (metres, straight line) from where it was
# held when the opportunity opened: the pick oracle's "> 0.05 m observed lift"
# (design/PARAMETERS.md, agent comparisons), the sources' smallest displacement of a
# held object that counts as a deliberate move. Not yet part of the contract (its
# hash would change); docs/records.md.
HELD_CHOICE_MIN_DISPLACEMENT_M = 0.05


class Referee(RefereeCore):
    def __init__(self, contract: TaskContract, instance: WeighingInstance, episode_id: str = "episode",
                 session_id: str = "", deadline_s: float | None = None):
        """``deadline_s``: the episode's sim-time budget. The episode ends by itself
        at task completion or at the deadline, so its scores depend on sim time
        only, never on when the caller got round to calling finish()."""
        super().__init__(contract, episode_id, session_id, deadline_s)
        self.instance = instance
        self.goal = Goal(float(instance.target_g), frozenset(instance.goal_set))
        self.z = initial_state(self.goal, instance.initial_on_pan)
        self.trackers = {o: ObjectTracker(o, contract) for o in sorted(self.z.locations)}
        # Objects held when the current opportunity opened: object -> {"p0": position
        # then, "airborne": lifted off every support since}.
        self._held_at_opening: dict[str, dict] = {}
        self._last_m: WorldMeasurement | None = None
        self._last_invalid = ""
        # Hand pressure: one onset per contiguous contact interval. The interval ends
        # only after no contact for the recognisers' release_hold_s (the release
        # hold), so contact flicker shorter than that is the same interval.
        self._pressure_last_contact_t: float | None = None
        self._pressure_onset_in_interval = False
        if (contract.binding or "") != getattr(instance, "binding", ""):  # the objects the condition scores
            raise ValueError(f"instance {instance.instance_id} binds {instance.binding or 'the default objects'!r}, "
                             f"condition {contract.condition} binds {contract.binding or 'the default objects'!r}")
        if contract.external_event is not None:  # the hidden-event condition (core.external_events)
            if not instance.external_event:
                raise ValueError(f"instance {instance.instance_id} lacks the trigger time of its condition's "
                                 f"external event {contract.external_event.name!r}")
            self._declare_external_event(contract.external_event, instance.external_event["trigger_t"])

    # ------------------------------------------------------------------ inputs
    def step(self, m: WorldMeasurement) -> list[dict]:
        """Consume one evaluator measurement; returns the records it produced."""
        ended, first, dt = self._begin_step(m.t)
        if ended is not None:
            return ended
        self._last_m = m
        v = view_of(m)
        if first:
            self._start(v)
        self._validity(v)
        if m.environment and ENVIRONMENT_KEY in m.environment:
            self._announced(m.t, m.environment[ENVIRONMENT_KEY])
        if self.external is not None:
            self._watch_premature(m.t, v.touched | ({PAN} if m.hand_on_pan else set()))

        confirmed: list[ConfirmedEvent] = []
        if not self.z.reading_ready and v.stable_eligible and not v.touched:
            confirmed.append(ConfirmedEvent(kind="reading_ready", t=m.t, measured_g=v.displayed_g))
        for name, tracker in self.trackers.items():
            o = m.objects.get(name)
            if o is None:
                continue
            recognitions, ce = tracker.step(v, o, self.z.locations[name])
            for r in recognitions:
                self._recognition(r)
            self._watch_released(m, v, name, o)
            if ce is not None:
                confirmed.append(ce)
        if self._held_at_opening:
            self._held_object_choice(m, v)

        holds, failures = self._terminal_predicate(m, v)
        z0 = self.z
        self.z, notes = update(self.contract, self.goal, z0, PhysicalEvidence(m.t, tuple(confirmed), holds,
                                                                                tuple(failures)), dt)
        for ce in confirmed:
            if ce.kind == "support":
                self._execution_outcome(ce)
        for note in notes:
            self._note(note)
        if confirmed:
            self._consistency(confirmed)
        if self.z.evidence_version != z0.evidence_version:
            self._new_evidence(m.t)
        for opp in self.book.expire(m.t):
            self._opportunity_closed(opp)
        if self.z.physically_complete and not z0.physically_complete:
            out = self._flush(m.t)
            return out + self.finish(m.t, "completed")[:-1]
        return self._flush(m.t)

    def _on_opened(self, opp: Opportunity, t: float) -> None:
        # Objects held when the opportunity opened: their next touchdown may be its choice.
        self._held_at_opening = {name: {"p0": self._position(name), "airborne": False}
                                 for name, tracker in self.trackers.items() if tracker.grasping}

    def check_intervention(self, intervention: dict, t: float) -> list[dict]:
        """Scope-check an Oracle intervention against the current opportunity and
        record its receipt (delivered | rejected_scope). First record: the receipt."""
        return self._scoped_intervention(
            intervention, t, self.contract.diagnostics, operation_types=WEIGHING_OPERATION_TYPES,
            hidden_values={"sample_mass_g": self.instance.sample_mass_g, "goal_set": self.instance.goal_set},
            site_checks=site_checks(self.contract))

    # ----------------------------------------------------------------- queries
    def legal_set(self) -> tuple[Operation, ...]:
        return self._gated(legal_set(self.contract, self.goal, self.z))

    # ---------------------------------------------------------------- internals
    def _start(self, v: MeasurementView) -> None:
        ready = v.stable_eligible and not v.touched
        self.z = replace(self.z, reading_ready=ready, last_stable_reading_g=v.displayed_g if ready else None,
                         evidence_version=1, evidence_time=v.t, evidence_trigger="initial_readiness")
        self._event("episode_start", v.t, detail={"instance_id": self.instance.instance_id,
                                                    "reading_ready": ready})
        self._new_evidence(v.t)

    def _announced(self, t: float, detail: dict) -> None:
        """The declared external event happened just before this state: new evidence,
        on which the normal legal set applies."""
        if self._external_event(t, detail):
            self.z = replace(self.z, evidence_version=self.z.evidence_version + 1, evidence_time=t,
                             evidence_trigger=EVIDENCE_TRIGGER)
            self._new_evidence(t)

    def _validity(self, v: MeasurementView) -> None:
        reason = v.invalid_reason
        if reason != self._last_invalid and reason:
            if reason == "overload":
                self._event("safety_violation", v.t, detail={"reason": "overload"})
                if "overload" not in self.violations and "overload" in self.contract.irreversible_violations:
                    self.violations.append("overload")
            elif reason != "hand_pressure":
                self._event("validity", v.t, detail={"reason": reason})
        self._last_invalid = reason
        self._hand_pressure(v)

    def _hand_pressure(self, v: MeasurementView) -> None:
        """Placing a weight touches the pan load until release while the reading is
        still settling; hand pressure marks contact on an otherwise eligible (stable)
        reading, once per contiguous contact interval (docs/records.md)."""
        hold = self.contract.recognisers.release_hold_s
        last = self._pressure_last_contact_t
        if not v.hand_pressure:
            if last is not None and v.t - last >= hold - 1e-9:
                self._pressure_last_contact_t, self._pressure_onset_in_interval = None, False
            return
        self._pressure_last_contact_t = v.t
        if v.contact_affects_reading and not self._pressure_onset_in_interval:
            self._pressure_onset_in_interval = True
            self._event("hand_pressure", v.t, measured_value=v.displayed_g)

    def _terminal_predicate(self, m: WorldMeasurement, v: MeasurementView):
        term = self.contract.terminal
        fails: list[str] = []
        b = m.balance
        if b is None or not b.valid:
            fails.append("reading_invalid")
        elif b.overload:
            fails.append("overload")
        else:
            if not math.isfinite(b.displayed_g) or abs(b.displayed_g - self.goal.target_g) > term.reading_tolerance_g + 1e-9:
                fails.append("reading_off_target")
            if term.require_stable_indicator and not b.stable:
                fails.append("unstable")
        # Release and stillness concern the load and the goal objects only: tidying
        # a table weight during the window does not disturb the weighing.
        scope = v.loading_pan | self.goal.goal_set | {SAMPLE}
        if term.require_release:
            if v.touched & scope:
                fails.append("robot_contact")
            if m.hand_on_pan:
                fails.append("hand_on_pan")
        if term.require_exact_standard_set:
            if v.on_pan.intersection(STANDARDS) != self.goal.goal_set:
                fails.append("standard_set")
        if term.require_sample_on_pan and v.support.get(SAMPLE) != S_PAN:
            fails.append("sample_not_on_pan")
        if self.awaiting_external_event:
            fails.append("external_event_pending")  # the task cannot end before the event
        if any(not still(o, term.linear_mps, term.angular_rps) for n, o in m.objects.items() if n in scope):
            fails.append("motion")
        return not fails, fails

    def _recognition(self, r: dict) -> None:
        cat, t, obj = r["category"], r["t"], r["object"]
        if cat != "grasp":
            self._event(cat, t, obj=obj, attempt=r["attempt"], detail={k: r[k] for k in r if k == "support"})
            self._note_release(r)
            return
        op = operation_for_grasp(self.z, obj)
        self._event("grasp", t, obj=obj, operation=op, attempt=r["attempt"], detail={"from": r["from"]})
        self._drop_before_regrasp(obj, t)
        opp = self.book.current
        execution = {"operation": op, "opportunity_id": -1, "attempt": r["attempt"], "t": t, "first": False}
        record = self.z.obligations.get(obj)
        if record and record["status"] == "confirmed" and relation_satisfied(self.goal, obj, self.z.locations[obj]):
            self._unnecessary_repetition(t, obj, op, r["attempt"],
                                         {"obligation": f"{obj}:{record['goal']}#{record['instance']}"})
        if opp is None or opp.evidence_version != self.z.evidence_version or not opp.accepts_choice_at(t):
            reason = ("no_delivered_evidence" if opp is None or opp.evidence_version != self.z.evidence_version
                      else "window_closed")
            self._event("choice", t, obj=obj, operation=op, attempt=r["attempt"],
                        opportunity_id=opp.id if opp else -1,
                        detail={"scored": False, "reason": reason})
            if reason == "no_delivered_evidence" and self._placement_pending(exclude=obj):
                self._premature_advancement(t, obj, op, "previous_placement_unconfirmed")
        elif opp.first_choice is None:
            self._score_first_choice(opp, op, obj, t, r["attempt"])
            execution.update(opportunity_id=opp.id, first=True)
            if not opp.native_scorable and not self.z.reading_ready:
                # Acting before the reading could tell what to do (Wait was the legal choice).
                self._premature_advancement(t, obj, op, "reading_not_ready", opportunity_id=opp.id)
        elif op != opp.first_choice:
            execution["opportunity_id"] = opp.id
            if self._placement_pending(exclude=obj):
                self._premature_advancement(t, obj, op, "previous_placement_unconfirmed", opportunity_id=opp.id)
            else:
                ev = self._event("choice_revision", t, obj=obj, operation=op, attempt=r["attempt"],
                                 opportunity_id=opp.id, detail={"correct": op in opp.legal_set})
                opp.revisions.append({"t": t, "operation": op.to_dict(), "event_id": ev["event_id"]})
        else:
            execution.update(opportunity_id=opp.id, first=True)  # regrasp of the chosen object
        self._executions[obj] = execution

    def _score_first_choice(self, opp: Opportunity, op: Operation, obj: str, t: float, attempt: int,
                            recognised_from: str = "") -> None:
        """Freeze the opportunity's first identifiable choice and score it."""
        correct = op in opp.legal_set
        opp.first_choice, opp.first_choice_t = op, t
        opp.execution = "pending"
        detail = {"scored": True, "correct": correct, "legal_set": [o.to_dict() for o in opp.legal_set]}
        if recognised_from:
            detail["recognised_from"] = recognised_from
        ev = self._event("choice", t, obj=obj, operation=op, attempt=attempt, opportunity_id=opp.id,
                         evidence_version=opp.evidence_version, detail=detail)
        opp.first_choice_event = ev["event_id"]
        if not correct:
            self.counts["incorrect_choice"] += 1
            self._error()

    def _position(self, name: str):
        o = self._last_m.objects.get(name) if self._last_m is not None else None
        return tuple(o.position) if o is not None else None

    def _held_object_choice(self, m: WorldMeasurement, v: MeasurementView) -> None:
        """An opportunity that opened while the robot held an object: that object's
        first touchdown after the opening (lifted off every support, then supported
        again) on a task location other than its confirmed one, at least
        HELD_CHOICE_MIN_DISPLACEMENT_M from where it was held at the opening,
        identifies the operation that moves it there (judged on the state before).
        A touchdown back on its confirmed location shows no choice: the object
        leaves the watch and the next grasp is the choice. docs/records.md."""
        opp = self.book.current
        if opp is None or opp.first_choice is not None or opp.evidence_version != self.z.evidence_version \
                or not opp.accepts_choice_at(v.t):
            self._held_at_opening.clear()
            return
        for obj in sorted(self._held_at_opening):
            watch = self._held_at_opening[obj]
            support = v.support.get(obj, S_NONE)
            if support == S_NONE:
                watch["airborne"] = True
                continue
            if not watch["airborne"]:
                if not self.trackers[obj].grasping:
                    del self._held_at_opening[obj]  # let go where it was, never lifted: no choice
                continue
            watch["airborne"] = False  # a touchdown
            here = self.z.locations[obj]
            if support == here:
                del self._held_at_opening[obj]  # put back where it was: no choice shown
                continue
            o = m.objects.get(obj)
            moved = (watch["p0"] is None or o is None
                     or math.dist(watch["p0"], o.position) >= HELD_CHOICE_MIN_DISPLACEMENT_M - 1e-12)
            if support not in (S_PAN, S_TABLE) or not moved:
                continue  # not onto a task location, or barely moved: wait for the next touchdown
            op = add(obj) if support == S_PAN else remove(obj)
            self._held_at_opening.clear()
            self._score_first_choice(opp, op, obj, v.t, self.trackers[obj].attempt,
                                     recognised_from="held_object_touchdown")
            execution = self._executions.get(obj)
            # Credited once: an execution already carrying an earlier opportunity's
            # first choice stays that choice's; this opportunity's is not measured.
            if execution is not None and execution["operation"] == op and not execution["first"]:
                execution.update(opportunity_id=opp.id, first=True)
            else:
                opp.execution = None
            return

    def _placement_pending(self, exclude: str) -> bool:
        """Another chosen object was released onto its destination but is not confirmed yet."""
        for obj, ex in self._executions.items():
            tr = self.trackers[obj]
            if obj != exclude and tr.placed_recognised and tr.pending_attempt and not tr.grasping \
                    and tr.placed_support == ex["operation"].destination:
                return True
        return False

    def _execution_outcome(self, ce: ConfirmedEvent) -> None:
        """A confirmed support change settles the execution that moved the object
        (core.protocol: a first choice whose object was dropped stays failed)."""
        ex = self._executions.get(ce.object) if ce.after_attempt else None
        if ex is None:
            return
        # Came to rest on nothing the task knows (it fell): a drop; on the other task
        # location: released outside its destination (core.protocol's failure kinds).
        failure = DROP if ce.location == ELSEWHERE else RELEASED_OUTSIDE
        self._settle_execution(ce.object, ce.t, ce.location == ex["operation"].destination, obj=ce.object,
                               attempt=ce.attempt, measured_value=ce.measured_g,
                               detail={"location": ce.location, "chosen_at": ex["t"]}, failure=failure)

    def _note_release(self, r: dict) -> None:
        """When a chosen object left the fingers, and on what it was."""
        ex = self._executions.get(r["object"])
        if ex is not None and r["category"] == "release":
            ex["released_t"], ex["released_support"] = r["t"], r["support"]

    def _watch_released(self, m: WorldMeasurement, v: MeasurementView, name: str, o) -> None:
        """Where a released chosen object first came to rest: untouched and still
        (the recognisers' low-motion thresholds), on whatever supports it, or on
        nothing the cell knows (it fell: the floor, off the table)."""
        ex = self._executions.get(name)
        if ex is None or "released_t" not in ex or "rested_support" in ex or name in v.touched:
            return
        if not still(o, self.contract.recognisers.low_motion_linear_mps,
                     self.contract.recognisers.low_motion_angular_rps):
            return
        ex["rested_support"] = v.support.get(name, S_NONE)
        ex["rested_t"] = v.t
        ex["rested_on_destination"] = touches_location(m, name, ex["operation"].destination)

    def _drop_before_regrasp(self, obj: str, t: float) -> None:
        """A regrasp before the confirmation dwell ended. The attempt that ended was a
        drop (paper 5.3: the object left the grasp and came to rest on a non-target
        support, or fell) when the object, released, came to rest away from its
        destination: on the table, the balance body, or nothing the cell knows.
        It was no drop when it never came to rest (released in mid-air and
        regrasped before touching anything), or rested on the destination, alone
        or leaning on something else too (an ambiguous re-seat). docs/records.md."""
        ex = self._executions.get(obj)
        if ex is None or "released_t" not in ex:
            return
        op: Operation = ex["operation"]
        support = ex.get("rested_support")
        if support is None:
            del ex["released_t"], ex["released_support"]  # caught before it came to rest
            return
        location = location_of(support)
        if location == op.destination or (support == S_AMBIGUOUS and ex.get("rested_on_destination")):
            for key in ("released_t", "released_support", "rested_support", "rested_t", "rested_on_destination"):
                ex.pop(key, None)
            return  # released onto the destination and picked up again: an adjustment
        self._settle_execution(obj, t, False, obj=obj, attempt=ex["attempt"],
                               detail={"location": location, "chosen_at": ex["t"], "drop": True,
                                       "support": support, "released_at": ex["released_t"]}, failure=DROP)

    def _note(self, n: dict) -> None:
        cat, t = n["category"], n["t"]
        obj = n.get("object", "")
        detail = {k: v for k, v in n.items() if k not in ("category", "t", "object", "measured_g", "attempt")}
        self._event(cat, t, obj=obj, attempt=n.get("attempt", 0), measured_value=n.get("measured_g"),
                    detail=detail)
        if cat == "support_change" and obj == SAMPLE and n["to"] != PAN:
            self._event("protocol_violation", t, obj=obj, detail={"reason": "sample_displaced"})
            if "sample_displaced" not in self.violations:
                self.violations.append("sample_displaced")
        elif cat == "obligation_opened" and n.get("regression"):
            self.counts["regression"] += 1
            self._error()
        if cat in ("obligation_confirmed", "task_complete"):
            self._resolve_errors(t, obj, by=cat)

    def _consistency(self, confirmed: list[ConfirmedEvent]) -> None:
        tol = self.contract.confirmation.reading_consistency_g
        expected = self.instance.sample_mass_g + sum(STANDARD_MASSES_G[o] for o in self.z.supported_standards)
        for ce in confirmed:
            if ce.measured_g is not None and abs(ce.measured_g - expected) > tol:
                self._event("validity", ce.t, obj=ce.object, measured_value=ce.measured_g,
                            detail={"reason": "reading_inconsistent", "expected_g": expected})

    def _new_evidence(self, t: float) -> None:
        z = self.z
        ops = self.legal_set()
        ev = Evidence(version=z.evidence_version, time=z.evidence_time, trigger=z.evidence_trigger,
                      reference_state=z.to_dict(), legal_set=ops)
        for opp in self.book.new_evidence(ev, t):
            self._opportunity_closed(opp)
        self._out.append(self._legal_set_record(t, None))
