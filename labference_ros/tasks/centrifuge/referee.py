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
insertion predicate held 0.5 s); seated elsewhere, left unseated in a socket
(shallow, tilted, or never released: unfinished) or dropped away from the
rotor is an execution failure, and the task state follows where the tube
actually is. A Pick is confirmed when the tube leaves its socket; falling back
in undoes it (a slip). Grasping the other tube while a placement is
unfinished or unconfirmed is premature advancement (4.1). The rules are
core.protocol's; this module supplies the predicates.
"""
from __future__ import annotations

from dataclasses import replace

from labference_ros.core.external_events import ENVIRONMENT_KEY, EVIDENCE_TRIGGER
from labference_ros.core.measurements import WorldMeasurement
from labference_ros.core.operations import INSERT, PICK, Operation, insert, pick
from labference_ros.core.protocol import DROP, OTHER_DESTINATION, SLIP, UNFINISHED
from labference_ros.core.referee_core import RefereeCore
from labference_ros.tasks.centrifuge import task_state as ts
from labference_ros.tasks.centrifuge.contract import CentrifugeContract
from labference_ros.tasks.centrifuge.insertion import ROBOT_CONTACTS, SeatTracker, seat_check
from labference_ros.tasks.centrifuge.oracle_scope import site_checks
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
        self._removals: dict[str, dict] = {}  # tube -> its confirmed Pick, until it is inserted again
        self._trigger = "confirmed_change"  # what the next new evidence is
        if (contract.binding or "") != getattr(instance, "binding", ""):  # the tubes the condition scores
            raise ValueError(f"instance {instance.instance_id} binds {instance.binding or 'the default objects'!r}, "
                             f"condition {contract.condition} binds {contract.binding or 'the default objects'!r}")
        if contract.external_event is not None:  # the hidden-event condition (core.external_events)
            if not instance.external_event:
                raise ValueError(f"instance {instance.instance_id} lacks the trigger time of its condition's "
                                 f"external event {contract.external_event.name!r}")
            self._declare_external_event(contract.external_event, instance.external_event["trigger_t"])

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
        if m.environment and ENVIRONMENT_KEY in m.environment \
                and self._external_event(m.t, m.environment[ENVIRONMENT_KEY]):
            # The lamp lit just before this state: new evidence, on which the normal legal set applies.
            self.z = replace(self.z, evidence_version=self.z.evidence_version + 1)
            self._new_evidence(m.t, EVIDENCE_TRIGGER)
            z0 = self.z
        if self.external is not None:
            self._watch_premature(m.t, {n for n, o in m.objects.items() if set(o.contacts) & set(ROBOT_CONTACTS)})
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
                self._removed(tube, m.t)
            self._watch_placement(tube, o, check, m)
        holds = all(t in checks and checks[t].seated for t in self.contract.tubes) \
            and not self.awaiting_external_event  # the task cannot end before the event
        self.z = ts.terminal_update(self.contract, self.z, m.t, dt, holds)
        if self.z.evidence_version != z0.evidence_version:
            self._new_evidence(m.t, self._trigger)
        self._trigger = "confirmed_change"
        for opp in self.book.expire(m.t):
            self._opportunity_closed(opp)
        if self.z.physically_complete and not z0.physically_complete:
            self._event("task_complete", m.t, detail={"seated": self.z.to_dict()["seated"]})
            self._resolve_errors(m.t, "", by="task_complete")
            out = self._flush(m.t)
            return out + self.finish(m.t, "completed")[:-1]
        return self._flush(m.t)

    def check_intervention(self, intervention: dict, t: float) -> list[dict]:
        """Scope check (core.oracle_scope, as every family's): bound to the open opportunity
        and the current evidence, only the site's declared fields and no evaluator facts;
        a decision carries one legal operation, a state only slot labels."""
        return self._scoped_intervention(intervention, t, self.contract.diagnostics,
                                         operation_types=self.contract.operation_types,
                                         site_checks=site_checks(self.contract))

    # ----------------------------------------------------------------- queries
    def legal_set(self) -> tuple[Operation, ...]:
        return self._gated(ts.legal_set(self.contract, self.z))

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
            self._removals.pop(tube, None)
            self._choice(op, tube, t, r["attempt"])
            return
        if cat == "grasp":
            self._grasped(tube, t, r["attempt"])
            return
        self._event(cat, t, obj=tube, attempt=r["attempt"])
        if cat == "release":
            self._note_released(tube, t)

    def _grasped(self, tube: str, t: float, attempt: int) -> None:
        """A grasp: a drop ended the attempt before it (core.protocol); taking the other
        tube while a placement is unfinished or unconfirmed is premature advancement;
        a seated tube's grasp is Pick(tube)."""
        dropped = self._regrasp_ends_attempt(tube)
        if dropped is not None:
            self._settle_execution(tube, t, False, failure=DROP, detail={"released_at": dropped.released_t})
            self._failed_attempt()
        waiting = sorted(u for u in self.contract.tubes if u != tube and self._placement_owed(u))
        if tube in self.z.seated:
            self._choice(pick(tube), tube, t, attempt)
        else:
            self._event("grasp", t, obj=tube, attempt=attempt)
            self._unfinished_noted.discard(tube)
        if waiting:
            opp = self.book.current
            self._premature_advancement(t, tube, None, "previous_placement_unfinished:" + ",".join(waiting),
                                        opportunity_id=opp.id if opp is not None else -1)

    def _placement_owed(self, tube: str) -> bool:
        """The tube's placement was begun and is not complete (4.1: "if insertion fails, the robot
        must complete that placement before advancing"): released and not yet settled, left
        unfinished in a socket, or inserted at least once and now not seated (dropped, or taken out)."""
        attempted = self.z.attempts.get(tube, 0) > 0
        return tube in self._released or tube in self.z.unfinished or (attempted and tube not in self.z.seated)

    def _choice(self, op: Operation, tube: str, t: float, attempt: int) -> None:
        kind, opp = self._identify_choice(op, tube, t, attempt)
        self._begin_execution(tube, op, -1 if kind == "unscored" else opp.id, t, kind in ("first", "repeat"))

    def _removed(self, tube: str, t: float) -> None:
        """A seated tube lifted out of its socket: a Pick being carried out is confirmed."""
        self.z = ts.confirm_removed(self.z, tube)
        self._event("tube_removed", t, obj=tube)
        ex = self._executions.get(tube)
        if ex is not None and ex["operation"].type == PICK:
            self._settle_execution(tube, t, True, detail={"removed": True})
            self._removals[tube] = {**ex, "confirmed_t": t}

    def _seated(self, tube: str, slot: int, t: float) -> None:
        self.z = ts.confirm_seated(self.z, tube, slot)
        self._event("insertion_confirmed", t, obj=tube, detail={"slot": slot_name(slot)})
        removal = self._removals.pop(tube, None)
        if removal is not None:
            # Taken out, then back in its socket with no insertion of its own: the Pick slipped.
            self._undo_execution(removal, t, SLIP, obj=tube, detail={"seated_in": slot_name(slot)})
        ok = self._execution_outcome(tube, t, seated_slot=slot)
        consistent = len(self.z.seated) < 2 or ts.opposite_pair(self.contract, self.z)
        if ok and consistent:
            self._resolve_errors(t, tube, by="insertion_confirmed")

    def _watch_placement(self, tube: str, o, check, m: WorldMeasurement) -> None:
        """Where a tube that left the hand (or was let go in a socket) came to rest
        without being seated: near a socket its placement is unfinished (shallow,
        tilted, on the rim, or never released, 4.1); anywhere else it was dropped."""
        t = m.t
        if tube in self.z.seated:
            self._rest_since.pop(tube, None)
            return
        th = self.contract.insertion
        still = o.linear_speed <= th.max_linear_mps and o.angular_speed <= th.max_angular_rps
        untouched = not set(o.contacts) & set(ROBOT_CONTACTS)
        near_socket = check.slot is not None
        if tube in self._released:
            done = self._watch_release(tube, t, at_rest=still and untouched, on_destination=near_socket,
                                       dwell_s=self.contract.insertion.dwell_s)
            if done and near_socket:
                self._unfinished(tube, check, t, unreleased=False)
            elif done:
                watch = self._released[tube]
                self._settle_execution(tube, t, False, failure=DROP,
                                       detail={"released_at": watch.released_t, "seated_in": None})
                self._failed_attempt()
            return
        # No release recognised: a tube at rest in a socket, the gripper opened but still
        # touching it (unreleased), or let go with no choice pending.
        released = untouched and not self.trackers[tube].grasping
        unreleased = "in_socket" in check.passed and not m.gripper_closing
        resting = near_socket and not check.seated and still and (released or unreleased)
        if not resting or tube in self._unfinished_noted:
            if not resting:
                self._rest_since.pop(tube, None)
            return
        since = self._rest_since.setdefault(tube, t)
        if t - since >= self.contract.insertion.dwell_s - 1e-9:
            self._unfinished(tube, check, t, unreleased=not untouched)

    def _unfinished(self, tube: str, check, t: float, unreleased: bool) -> None:
        self._unfinished_noted.add(tube)
        self._rest_since.pop(tube, None)
        self.z = ts.confirm_unfinished(self.z, tube, check.slot)
        self._event("insertion_unfinished", t, obj=tube,
                    detail={"slot": slot_name(check.slot), "failures": list(check.failures),
                            "unreleased": unreleased})
        self._execution_outcome(tube, t, seated_slot=None)

    def _failed_attempt(self) -> None:
        """A failed attempt is new evidence (OpportunityRules.triggers: failed_attempt)."""
        self.z = ts.note_failed_attempt(self.z)
        self._trigger = "failed_attempt"

    def _execution_outcome(self, tube: str, t: float, seated_slot: int | None) -> bool:
        ex = self._executions.get(tube)
        if ex is None:
            return False
        op: Operation = ex["operation"]
        ok = op.type == INSERT and seated_slot is not None and slot_index(op.destination) == seated_slot
        failure = UNFINISHED if seated_slot is None else OTHER_DESTINATION
        self._settle_execution(tube, t, ok, failure=failure,
                               detail={"seated_in": None if seated_slot is None else slot_name(seated_slot)})
        return ok

    def _new_evidence(self, t: float, trigger: str) -> None:
        self._open_evidence(t, trigger)
