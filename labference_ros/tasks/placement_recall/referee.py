"""Referee of one placement-recall episode: recognisers, the seating predicate,
F and U, opportunities and scoring (paper 4.3, 5, 8.3).

Same inputs and outputs as every family's referee (tasks/base.py
EpisodeReferee), plus one: environment_transition(t), the occluded rack
transition's end, which the environment announces (the simulator, or the
operator on a real rig). Measurements during the transition are not delivered
(recognition pauses); afterwards everything is judged in the rack's measured
frame, so a hole keeps its label when the rack moves.

Three choices are identified, each at its own opportunity:
  placement   the held target's first descent into a hole: Insert(target, h);
              the hole it is then confirmed seated in is the retrieval reference,
              the intended one is kept beside it (placement deviation)
  retrieval   the grip point's first deliberate pre-contact descent over a hole:
              Pick(target, h), scored against the placed hole (the primary metric);
              kept even if the grasp then fails, later approaches are revisions
  delivery    the target released on the table: Remove(target, table)
Completion: the target out of the rack, released upright and still in the marked
region on the table, the distractors in their holes, continuously for 3 s.

Failed attempts and recoveries follow core.protocol: the target released that came
to rest unseated in a hole leaves the placement unfinished, anywhere else it was
dropped; delivered to rest outside the region is a failed delivery; a retrieved
target seated in a hole again slipped back (the retrieval is undone and pending
again). Each is an execution failure of the choice being carried out and opens
new evidence (the retry is a new opportunity's choice). Approaching a hole for
retrieval or grasping another tube while the placement is unfinished or
unconfirmed is premature advancement. Confirmed placement, retrieval and
completion resolve the outstanding errors (recovered completion, 7.2).
No clock, no randomness.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from labference_ros.core.measurements import TABLE, WorldMeasurement
from labference_ros.core.operations import PICK, REMOVE, Operation, insert, remove
from labference_ros.core.protocol import DROP, RELEASED_OUTSIDE, OTHER_DESTINATION, SLIP, UNFINISHED, WRONG_OBJECT
from labference_ros.core.referee_core import RefereeCore
from labference_ros.core.scoring import commitment_track
from labference_ros.tasks.grasping import ROBOT_CONTACTS
from labference_ros.tasks.placement_recall import task_state as ts
from labference_ros.tasks.placement_recall.contract import PlacementContract
from labference_ros.tasks.placement_recall.instances import PlacementInstance
from labference_ros.tasks.placement_recall.oracle_scope import site_checks
from labference_ros.tasks.placement_recall.rack import LABELS, hole_positions, hole_under, to_local
from labference_ros.tasks.placement_recall.recognisers import (
    RetrievalTracker,
    SeatTracker,
    TubeTracker,
    rack_pose,
    seat_check,
    tube_bottom,
)

LIFTED_M = 0.005  # a tube's bottom this far above the rack's top face is out of its hole


class Referee(RefereeCore):
    def __init__(self, contract: PlacementContract, instance: PlacementInstance, episode_id: str = "episode",
                 session_id: str = "", deadline_s: float | None = None):
        super().__init__(contract, episode_id, session_id, deadline_s)
        if (contract.binding or "") != instance.binding:  # the tubes the condition scores
            raise ValueError(f"instance {instance.instance_id} binds {instance.binding or 'the default objects'!r}, "
                             f"condition {contract.condition} binds {contract.binding or 'the default objects'!r}")
        self.instance = instance
        self.pose = instance.rack_pose
        self.pose_at_placement = instance.rack_pose
        placed = None if instance.placed_hole is None else (contract.target, instance.placed_hole)
        self.z = ts.initial_state(instance.distractors, placed)
        self.tubes = instance.tubes
        self.trackers = {t: TubeTracker(t, contract) for t in self.tubes}
        self.seats = {t: SeatTracker(contract) for t in self.tubes}
        self.retrieval = RetrievalTracker(contract)
        self._unfinished_hole: str | None = None  # the hole the target rests in unseated, its placement unfinished
        self._retrieval_ex: dict | None = None  # the retrieval execution confirmed, until the target leaves the rack
        self._trigger = "confirmed_change"  # what the next new evidence is
        self._retrieval: dict = {"reached": False, "chosen_hole": None, "correct": None, "t": None,
                                 "old_world_position_hole": None}
        self._wrong_tubes: set[str] = set()  # distractors grasped while retrieving
        self._transitions: list[dict] = []  # the environment transitions announced, and whether they count
        self._bottom_above: bool | None = None  # the target's bottom above the rack's top face, last measured
        self._guide_entry: dict | None = None  # where the target's bottom first entered the rack's top face

    # ------------------------------------------------------------------ inputs
    def step(self, m: WorldMeasurement) -> list[dict]:
        ended, first, dt = self._begin_step(m.t)
        if ended is not None:
            return ended
        z0 = self.z
        if first:
            self.z = replace(z0, evidence_version=1)
            self._event("episode_start", m.t, detail={"instance_id": self.instance.instance_id,
                                                        "occupied": self.z.to_dict()["occupied"]})
            self._new_evidence(m.t, "initial_readiness")
            z0 = self.z
        announced = []
        if m.environment and "transition" in m.environment:
            # The environment moved just before this state (lab_sim's occluded transition):
            # retrieval opens before this first state after it is recognised.
            announced = self.environment_transition(m.t, m.environment["transition"])
            z0 = self.z
        elif m.environment:
            self._event("validity", m.t, detail={"reason": "unknown environment event", "environment": m.environment})
        self.pose = rack_pose(m, self.pose)
        for tube in self.tubes:
            o = m.objects.get(tube)
            if o is None:
                continue
            for r in self.trackers[tube].step(m, o, self.pose):
                self._recognition(r, tube)
            if tube == self.contract.target and self.z.phase == ts.PLACE:
                self._note_guide_entry(o, m.t)
            check = seat_check(o, self.pose, self.contract)
            hole = self.seats[tube].update(m.t, check)
            if hole is not None and tube == self.contract.target and self.z.phase == ts.PLACE:
                self._placed(hole, m.t)
            elif hole is not None and tube == self.contract.target and self.z.phase == ts.DELIVER:
                self._slipped_back(hole, m.t)
            if tube == self.contract.target:
                self._watch_target(m, o, check)
            if tube == self.contract.target and self.z.phase == ts.RETRIEVE and self.trackers[tube].grasping:
                bottom, _tilt = tube_bottom(o, self.contract.tube.length_m)
                if to_local(bottom, self.pose)[2] > LIFTED_M:
                    self._retrieved(m.t)
            if tube != self.contract.target and self.trackers[tube].grasping and self.z.phase == ts.RETRIEVE \
                    and tube not in self._wrong_tubes:
                self._disturbed(tube, m.t)
        for r in self.retrieval.step(m, self.pose):
            self._retrieval_attempt(r["hole"], r["t"])
        self.z = ts.terminal_update(self.contract, self.z, m.t, dt, self._delivered(m))
        if self.z.evidence_version != z0.evidence_version:
            self._new_evidence(m.t, self._trigger)
        self._trigger = "confirmed_change"
        for opp in self.book.expire(m.t):
            self._opportunity_closed(opp)
        if self.z.physically_complete and not z0.physically_complete:
            self._event("task_complete", m.t, detail={"placed_hole": self.z.placed_hole})
            self._outcome(self.contract.target, m.t, ok=lambda op: op.type == REMOVE, detail={"in_region": True})
            self._resolve_errors(m.t, self.contract.target, by="task_complete")
            out = self._flush(m.t)
            return announced + out + self.finish(m.t, "completed")[:-1]
        return announced + self._flush(m.t)

    def environment_transition(self, t: float, detail: dict | None = None) -> list[dict]:
        """The occluded environment transition ended at t (the rack may have moved):
        retrieval opens once the placement is confirmed."""
        if self.finished:
            self.late_inputs["environment_transition"] += 1
            return []
        z0 = self.z
        self.z = ts.environment_transition(z0)
        self._event("environment_transition", t, detail={**(detail or {}), "phase_before": z0.phase})
        # What makes the episode's retrieval no test of recall is recorded as such: a transition
        # that did not keep the tubes' places in the rack, or one before the placement counted.
        reasons = []
        if (detail or {}).get("valid") is False:
            reasons.append("transition did not keep every tube's pose relative to the rack")
        if z0.phase != ts.WITHDRAW:
            reasons.append(f"transition in phase {z0.phase}, not after a confirmed placement")
        if reasons:
            self._event("validity", t, detail={"reasons": reasons, "transition": (detail or {}).get("id")})
        self._transitions.append({"id": (detail or {}).get("id"), "t": t, "valid": not reasons,
                                  "object_generations": (detail or {}).get("object_generations")})
        if self.z.evidence_version != z0.evidence_version:
            # Retrieval starts afresh: what the hand did before the occlusion (a premature
            # approach, already scored against Wait) neither blocks nor stands in for its choice.
            self.retrieval = RetrievalTracker(self.contract)
            self._executions.pop("retrieval", None)
            self._new_evidence(t, "environment_transition")
        return self._flush(t)

    def _on_opened(self, opp, t: float) -> None:
        if self.z.phase == ts.RETRIEVE and any(op.type == PICK for op in opp.legal_set):
            self._retrieval["reached"] = True  # the retrieval opportunity opened

    def check_intervention(self, intervention: dict, t: float) -> list[dict]:
        """Scope check (core.oracle_scope, as every family's): bound to the open opportunity
        and the current evidence, only the site's declared fields and no evaluator facts; a
        decision carries one legal operation, a state only hole labels (oracle_scope.py)."""
        return self._scoped_intervention(intervention, t, self.contract.diagnostics,
                                         operation_types=self.contract.operation_types,
                                         site_checks=site_checks(self.contract))

    # ----------------------------------------------------------------- queries
    def legal_set(self) -> tuple[Operation, ...]:
        return ts.legal_set(self.contract, self.z)

    def _scores_extra(self, scores: dict) -> None:
        state = self.z.to_dict()
        scores["placement"] = {"intended_hole": state["intended_hole"], "placed_hole": state["placed_hole"],
                               "deviation": state["placement_deviation"], "guide_entry": self._guide_entry}
        scores["retrieval"] = {**self._retrieval, "reference_hole": state["placed_hole"],
                               "retrieved": state["retrieved"]}
        # Retrieval commitments: scored where retrieval is the choice (its opportunities).
        retrieval = [o for o in self.opportunities if any(op.type == PICK for op in o.legal_set)]
        scores["commitment"] = commitment_track(retrieval, self.commitments)
        scores["environment_transitions"] = list(self._transitions)
        scores["history_protocol"] = self.contract.history_protocol

    # ---------------------------------------------------------------- internals
    def _note_guide_entry(self, o, t: float) -> None:
        """The placement's handoff to the guides: the first time the target's bottom passes
        the rack's top face within its outline, how far it was from the nearest hole's axis
        and how upright,
        against the contract's guide tolerances (placement assistance, never a choice)."""
        bottom, tilt = tube_bottom(o, self.contract.tube.length_m)
        local = to_local(bottom, self.pose)
        above = bool(local[2] > 0.0)
        rack = self.contract.rack
        over_rack = abs(local[0]) <= rack.half_size[0] and abs(local[1]) <= rack.half_size[1]
        if self._bottom_above and not above and over_rack and self._guide_entry is None:
            offsets = {h: float(np.max(np.abs(local[:2] - rack.local_hole(h)[:2]))) for h in LABELS}
            hole = min(offsets, key=offsets.get)
            tolerance = self.contract.guide_handoff
            self._guide_entry = {"t": t, "hole": hole, "lateral_offset_m": round(offsets[hole], 6),
                                 "tilt_deg": round(tilt, 3),
                                 "within_tolerance": offsets[hole] <= tolerance.lateral_m
                                 and tilt <= tolerance.max_tilt_deg}
        self._bottom_above = above

    def _recognition(self, r: dict, tube: str) -> None:
        cat, t = r["category"], r["t"]
        if cat == "placement_attempt" and tube == self.contract.target and self.z.phase == ts.PLACE:
            self.z = ts.note_intended(self.z, r["hole"])
            self._choice(insert(tube, r["hole"]), tube, t, r["attempt"])
            return
        if cat == "grasp":
            dropped = self._regrasp_ends_attempt(tube)
            if dropped is not None:
                self._settle_execution(tube, t, False, failure=DROP, detail={"released_at": dropped.released_t})
                self._failed_attempt()
            if tube == self.contract.target:
                self._unfinished_hole = None  # taken up again: the placement is being completed
        self._event(cat, t, obj=tube, attempt=r["attempt"], detail={"hole": r["hole"]} if "hole" in r else None)
        if cat == "grasp" and tube != self.contract.target and self._placement_waiting():
            self._premature_advancement(t, tube, None, "placement_unconfirmed", opportunity_id=self._current_id())
        if cat == "release" and tube == self.contract.target and self.z.phase == ts.DELIVER:
            self._choice(remove(tube), tube, t, r["attempt"])
        if cat == "release":
            self._note_released(tube, t)
        if cat == "release" and tube == self.contract.target and self.z.phase == ts.PLACE:
            self.retrieval = RetrievalTracker(self.contract)  # the hand let go: its next descent is pre-contact

    def _current_id(self) -> int:
        return self.book.current.id if self.book.current is not None else -1

    def _placement_waiting(self) -> bool:
        """The target let go for its placement, not confirmed seated yet (or unfinished)."""
        target = self.contract.target
        return self.z.phase == ts.PLACE and (target in self._released or self._unfinished_hole is not None)

    def _watch_target(self, m: WorldMeasurement, o, check) -> None:
        """Where the released target came to rest when no predicate confirmed it: unseated
        in a hole (the placement unfinished), elsewhere while placing (a drop), or, while
        delivering, outside the marked region (a failed delivery)."""
        target = self.contract.target
        if target not in self._released:
            return
        th = self.contract.seating
        still = o.linear_speed <= th.max_linear_mps and o.angular_speed <= th.max_angular_rps
        untouched = not set(o.contacts) & set(ROBOT_CONTACTS)
        placing = self.z.phase == ts.PLACE
        in_hole = check.hole is not None
        on_destination = in_hole if placing else self._delivered(m)
        if not self._watch_release(target, m.t, at_rest=still and untouched, on_destination=on_destination,
                                   dwell_s=th.dwell_s):
            return
        released_at = self._released[target].released_t
        if placing and in_hole:
            self._unfinished_hole = check.hole
            self._event("placement_unfinished", m.t, obj=target,
                        detail={"hole": check.hole, "failures": list(check.failures)})
            self._settle_execution(target, m.t, False, failure=UNFINISHED,
                                   detail={"hole": check.hole, "released_at": released_at})
            self._failed_attempt()
        elif placing:
            self._settle_execution(target, m.t, False, failure=DROP, detail={"released_at": released_at})
            self._failed_attempt()
        elif self.z.phase == ts.DELIVER and not on_destination:
            # Outside the marked region, on the table or unseated in a rack hole: the delivery failed.
            self._settle_execution(target, m.t, False, failure=RELEASED_OUTSIDE,
                                   detail={"released_at": released_at, **({"hole": check.hole} if in_hole else {})})
            self._failed_attempt()
        else:
            self._released.pop(target, None)  # in the region: completion settles it

    def _failed_attempt(self) -> None:
        """A failed attempt is new evidence: the retry is a new opportunity's choice."""
        self.z = ts.note_failed_attempt(self.z)
        self._trigger = "failed_attempt"

    def _slipped_back(self, hole: str, t: float) -> None:
        """The retrieved target seated in a hole again: the retrieval is undone (core.protocol
        SLIP), a delivery being carried out failed, and retrieval is pending from that hole."""
        target = self.contract.target
        self.z = ts.undo_retrieved(self.z, target, hole)
        self._event("retrieval_undone", t, obj=target, detail={"hole": hole})
        self._settle_execution(target, t, False, failure=SLIP, detail={"seated_in": hole})
        if self._retrieval_ex is not None:
            self._undo_execution(self._retrieval_ex, t, SLIP, obj=target, detail={"seated_in": hole})
            self._retrieval_ex = None
        self.retrieval = RetrievalTracker(self.contract)  # the next retrieval is a fresh pre-contact approach
        self._executions.pop("retrieval", None)

    def _retrieval_attempt(self, hole: str, t: float) -> None:
        if self.z.phase not in (ts.WITHDRAW, ts.RETRIEVE):
            self._event("approach", t, detail={"hole": hole, "phase": self.z.phase})
            # Over the hole the unfinished target rests in, the hand comes to take it up again.
            if self._placement_waiting() and hole != self._unfinished_hole:
                self._premature_advancement(t, "", None, "placement_unconfirmed", opportunity_id=self._current_id())
            return
        kind = self._choice(ts.retrieve(self.contract.target, hole), "", t, 0)
        if kind == "first" and self.z.phase == ts.RETRIEVE:
            # Beside the scored choice: the hole that now stands where the reference stood
            # before the occlusion (where a system that returned to the old world position went).
            placed = self.z.placed_hole
            self._retrieval.update(chosen_hole=hole, correct=hole == placed, t=t,
                                   old_world_position_hole=self._hole_now_at_old_position(placed))

    def _hole_now_at_old_position(self, placed: str | None) -> str | None:
        if placed is None:
            return None
        old = hole_positions(self.contract.rack, self.pose_at_placement)[placed]
        return hole_under(old, self.contract.rack, self.pose) or None

    def _choice(self, op: Operation, tube: str, t: float, attempt: int) -> str:
        """Record a recognised choice; its kind (core.referee_core._identify_choice)."""
        kind, opp = self._identify_choice(op, tube, t, attempt)
        key = tube or "retrieval"
        if kind == "first" or (kind != "revision" and key not in self._executions):
            # A later correction leaves the first choice the one being carried out.
            self._begin_execution(key, op, -1 if kind == "unscored" else opp.id, t, kind in ("first", "repeat"))
        return kind

    def _placed(self, hole: str, t: float) -> None:
        self.z = ts.confirm_placed(self.z, self.contract.target, hole)
        self.pose_at_placement = self.pose
        self.retrieval = RetrievalTracker(self.contract)  # the hand let go: the next descent is pre-contact
        self._event("placement_confirmed", t, obj=self.contract.target,
                    detail={"hole": hole, "intended_hole": self.z.intended_hole,
                            "deviation": self.z.placement_deviation})
        self._unfinished_hole = None
        self._outcome(self.contract.target, t, ok=lambda op: op.destination == hole, detail={"seated_in": hole},
                      failure=OTHER_DESTINATION)
        self._resolve_errors(t, self.contract.target, by="placement_confirmed")

    def _retrieved(self, t: float) -> None:
        self.z = ts.confirm_retrieved(self.z, self.contract.target)
        placed = self.z.placed_hole
        self._event("retrieval_confirmed", t, obj=self.contract.target, detail={"from_hole": placed})
        ex = self._executions.get("retrieval")
        self._outcome("retrieval", t, ok=lambda op: op.destination == placed, detail={"from_hole": placed},
                      failure=OTHER_DESTINATION)
        if ex is not None and ex["operation"].destination == placed:
            self._retrieval_ex = {**ex, "confirmed_t": t}
        self._resolve_errors(t, self.contract.target, by="retrieval_confirmed")

    def _disturbed(self, tube: str, t: float) -> None:
        """A distractor grasped while retrieving: the retrieval being carried out took the wrong tube."""
        self._wrong_tubes.add(tube)
        self._event("distractor_grasped", t, obj=tube, detail={"hole": self.instance.distractors.get(tube)})
        self._outcome("retrieval", t, ok=lambda op: False, detail={"grasped": tube}, failure=WRONG_OBJECT)

    def _outcome(self, key: str, t: float, ok, detail: dict, failure: str | None = None) -> None:
        ex = self._executions.get(key)
        if ex is None:
            return
        self._settle_execution(key, t, bool(ok(ex["operation"])), detail=detail, failure=failure)

    def _delivered(self, m: WorldMeasurement) -> bool:
        """The terminal predicate at this instant."""
        if self.z.phase != ts.DELIVER:
            return False
        target = m.objects.get(self.contract.target)
        if target is None:
            return False
        bottom, tilt = tube_bottom(target, self.contract.tube.length_m)
        th = self.contract.seating
        on_table = TABLE in target.contacts and not set(target.contacts) & set(ROBOT_CONTACTS)
        still = target.linear_speed <= th.max_linear_mps and target.angular_speed <= th.max_angular_rps
        in_region = self.contract.release_region.contains(float(bottom[0]), float(bottom[1]))
        kept = all(self._in_hole(m, tube, hole) for tube, hole in self.instance.distractors.items())
        return on_table and still and in_region and tilt <= self.contract.terminal.max_tilt_deg and kept

    def _in_hole(self, m: WorldMeasurement, tube: str, hole: str) -> bool:
        """The tube stands seated in that hole (every check of the seating predicate)."""
        o = m.objects.get(tube)
        if o is None:
            return False
        check = seat_check(o, self.pose, self.contract)
        return check.hole == hole and check.seated

    def _new_evidence(self, t: float, trigger: str) -> None:
        self._open_evidence(t, trigger)
