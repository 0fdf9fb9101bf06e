"""Reference systems for centrifuge loading.

Both pick a tube standing on the table top-down and insert it bottom first along
its slot's axis (skills/motion.plan_pick_insert: released in the mouth's funnel, it
slides on to the seat). They differ in what the second destination follows from:

- scripted_expert (privileged): the occupancy the rotor shows now (the insertion
  predicate on the measured tubes, EvaluatorView.facts["seated"]); the first tube of
  an extended episode goes into a slot drawn with the policy seed.
- plan_follower (privileged): the paper's failure mode, following the plan instead of
  the outcome. The second tube goes opposite the slot it *intended* for the first,
  whatever slot the first actually settled in; without an intention of its own (a
  tube seated before its episode began) it reads the occupancy as the expert does.
  An intention may come from its own insertion or from a checkpoint's history
  (receive_prefix: Insert(tube, slot) it carried out before the checkpoint).

Imperfect systems (paper 5.3: the mistakes real policies make; privileged, choosing as
the expert does):
- dropper: carries its first tube toward the chosen slot's mouth, then sets it down back
  on the table where it stood (a drop after a correct choice), and on its next turn
  retries as the expert: a recovered completion.
- hurried: brings each tube down toward its slot's mouth along the socket's axis, then lifts
  it and lets it go above the mouth leaning 4 degrees outward (34 degrees off the socket's
  axis, which leans inward), where it comes to rest on the rim; it takes the next tube
  without looking whether the first one seated, opposite the slot it meant the first for.
  The first placement is left unfinished, so taking the second tube is premature
  advancement; one try per tube, then it stops (early termination).
- second_guess: where the destination follows from an occupied slot, its held tube
  first descends toward the neighbouring (wrong) slot, then leaves it and is inserted
  opposite: a wrong first choice corrected, a recovered completion.
- impatient_expert: the expert that ignores an instruction's ready-lamp rule (the
  hidden-event condition): it takes the free tube at once, a premature interaction.

Where the instruction says to wait for the ready lamp (the hidden-event condition),
every other system holds still until the front camera's image shows the lamp lit
(perception.ready_lamp_lit): the privileged ones too read that from the observation
alone, never from the instance's trigger time.

All expose the Oracle's state and decision sites (paper 6): the state they act on,
{"occupied_slots": [...]} (the expert's as measured, the plan follower's as planned),
can be replaced or assisted by the occupancy the rotor shows, and the operation they
commit to can be replaced; each decision's original and used outputs are logged
(interface_log) and its commitment reported on the explicit track.
"""
from __future__ import annotations

import math
import random

import numpy as np

from labference_ros.core.observation import PolicyObservation
from labference_ros.core.operations import Operation, insert
from labference_ros.core.system import AcceptsSupports, EvaluatorView
from labference_ros.skills.motion import tube_open_width
from labference_ros.tasks.centrifuge.contract import contract_for
from labference_ros.tasks.centrifuge.instances import READY_LAMP_RULE
from labference_ros.tasks.centrifuge.moves import plan_insert, plan_insert_at
from labference_ros.tasks.centrifuge.rotor import opposite, slot_frames, slot_index, slot_name
from labference_ros.tasks.scripted_base import PlannedMotionSystem


class _WaitsForReadyLamp:
    """An instruction's ready-lamp rule kept: no move until the front camera has shown the
    lamp lit (a system that cannot see the front camera keeps waiting)."""

    waits_for_ready_lamp = True

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.ready_lamp_seen = False

    def awaiting_cue(self, obs: PolicyObservation) -> bool:
        from labference_ros.tasks.centrifuge.perception import ready_lamp_lit

        if not self.waits_for_ready_lamp or self.ready_lamp_seen or READY_LAMP_RULE not in obs.instruction:
            return False
        image = obs.images.get("front")
        if image is None or not ready_lamp_lit(image):
            return True
        self.ready_lamp_seen = True
        self._note(t=obs.sim_time, ready_lamp_seen=True)
        return False


class _Loader(_WaitsForReadyLamp, AcceptsSupports, PlannedMotionSystem):
    """Shared: the move is (tube, its measured centre, the destination slot)."""

    privileged = True
    INTERFACES = {"state": ("assist", "replace"), "decision": ("replace",)}  # capability negotiation
    RETRIES = 0  # further insertions of a tube whose insertion did not seat it

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.intended: dict[str, int] = {}  # tube -> the slot this system meant it for
        self.supplied: dict[str, dict] = {}  # site -> the latest delivered payload
        self.interface_log: list[dict] = []  # original and used outputs per decision
        self._reported = 0

    def drain_reports(self) -> list[dict]:
        """Each decision's commitment as an explicit report (the separately scored track)."""
        new = self.interface_log[self._reported:]
        self._reported = len(self.interface_log)
        return [{"operation": e["operation_used"], "source": self.name} for e in new]

    def receive_prefix(self, prefix: list[dict]) -> None:
        """A checkpoint's earlier insertions count as this system's own intentions."""
        for step in prefix:
            op = step["operation"]
            if op.get("type") == "insert" and op.get("object") and op.get("destination"):
                self.intended[op["object"]] = slot_index(op["destination"])
                self.moved.append(op["object"])
                self._note(t=step["t"], prefix=op)

    def plan_move(self, obs: PolicyObservation, move: tuple):
        tube, centre, slot = move
        self.intended[tube] = slot
        return plan_insert(self.planner, obs.joint_positions, self._instance, centre, slot,
                           tube_open_width(self.spec.gripper))

    def decide(self, obs: PolicyObservation, evaluator: EvaluatorView | None = None):
        if evaluator is None:
            raise ValueError(f"{self.name} is privileged: it needs the evaluator view")
        self._instance = instance = evaluator.instance
        contract = contract_for(instance.condition)
        n = contract.rotor.n_slots
        seated = dict(evaluator.facts.get("seated", {}))
        pending = [t for t in contract.tubes if t not in seated]
        t = obs.sim_time
        if not pending:
            self._note(t=t, seated=seated, done=True)
            self.finished = True
            return None
        tube = self.next_tube(pending)
        if self.moved.count(tube) > self.RETRIES:  # its insertion did not seat it: no further try
            self._note(t=t, seated=seated, gave_up=tube)
            self.finished = True
            return None
        own = {"occupied_slots": sorted(slot_name(s) for s in self.believed_occupied(seated, contract.tubes))}
        state = own
        if "state" in self.supplied:  # the rotor's occupancy as delivered, in place of its own
            state = {"occupied_slots": list(self.supplied["state"].get("occupied_slots") or [])}
        occupied = [slot_index(s) for s in state["occupied_slots"]]
        if occupied:
            slot = opposite(occupied[0], n)
        else:
            slot = random.Random(f"centrifuge-first-slot:{self.policy_seed}").randrange(n)
        chosen = insert(tube, slot_name(slot))
        used = chosen
        if self.supplied.get("decision", {}).get("mode") == "replace":
            supplied = Operation.from_dict(self.supplied["decision"]["operation"])
            if supplied.object in evaluator.positions:
                used = supplied
        self.interface_log.append({"t": t, "state_original": own, "state_used": state,
                                   "operation_original": chosen.to_dict(), "operation_used": used.to_dict()})
        self._note(t=t, seated=seated, state=state, operation=used.to_dict())
        return used.object, evaluator.positions[used.object], slot_index(used.destination)

    def believed_occupied(self, seated: dict[str, int], tubes) -> list[int]:
        """The slots this system takes as occupied: what the rotor shows."""
        return list(seated.values())

    def next_tube(self, pending: list[str]) -> str:
        """Which of the tubes not seated it takes next."""
        return pending[0]


class ScriptedExpert(_Loader):
    name = "scripted_expert"


class ImpatientExpert(ScriptedExpert):
    name = "impatient_expert"
    waits_for_ready_lamp = False


class Dropper(_Loader):
    """Its first tube is let go back on the table after its approach to the chosen slot;
    then it tries again."""

    name = "dropper"
    RETRIES = 1

    def plan_move(self, obs: PolicyObservation, move: tuple):
        tube, centre, slot = move
        self.intended[tube] = slot
        first = not any(self.moved)
        length = contract_for(self._instance.condition).tube.length_m
        # Let go where it stood: that spot of the table is free now.
        spot = (float(centre[0]), float(centre[1]), float(centre[2]) - length / 2) if first else None
        if first:
            self._note(t=obs.sim_time, abandon_at=list(spot))
        return plan_insert(self.planner, obs.joint_positions, self._instance, centre, slot,
                           tube_open_width(self.spec.gripper), abandon_at=spot)


class SecondGuess(_Loader):
    """Where an occupied slot fixes the destination, its held tube first descends toward the
    slot next to the right one, then is inserted opposite."""

    name = "second_guess"

    def decide(self, obs: PolicyObservation, evaluator: EvaluatorView | None = None):
        self._occupied_now = dict(evaluator.facts.get("seated", {})) if evaluator is not None else {}
        return super().decide(obs, evaluator)

    def plan_move(self, obs: PolicyObservation, move: tuple):
        tube, centre, slot = move
        self.intended[tube] = slot
        n = contract_for(self._instance.condition).rotor.n_slots
        wrong = (slot + 1) % n if self._occupied_now else None
        self._note(t=obs.sim_time, detour_slot=None if wrong is None else slot_name(wrong))
        return plan_insert(self.planner, obs.joint_positions, self._instance, centre, slot,
                           tube_open_width(self.spec.gripper), detour_slot=wrong)


class PlanFollower(_Loader):
    name = "plan_follower"

    def believed_occupied(self, seated: dict[str, int], tubes) -> list[int]:
        """Where it meant its tubes to go, not where they went; what it did not place
        itself (seated before its episode began) as the rotor shows it."""
        planned = {tube: self.intended[tube] for tube in tubes if tube in self.intended}
        return sorted({**seated, **planned}.values())


# hurried: the tube's lean from vertical, outward (away from the rotor's axis), when it is
# let go above the mouth: 34 degrees off the socket's axis, which leans the other way (at 10 degrees the
# tube toppled off the rotor on to the table).
HURRIED_OUTWARD_LEAN_DEG = 4.0


class Hurried(PlanFollower):
    """Lets each tube go above its slot's mouth leaning outward, away from the socket's
    axis, and takes the next tube at once,
    opposite the slot it meant the first one for, without looking whether the first one
    seated."""

    name = "hurried"

    def next_tube(self, pending: list[str]) -> str:
        fresh = [t for t in pending if t not in self.moved]
        return fresh[0] if fresh else pending[0]

    def plan_move(self, obs: PolicyObservation, move: tuple):
        tube, centre, slot = move
        self.intended[tube] = slot
        contract = contract_for(self._instance.condition)
        frame = slot_frames(contract.rotor, self._instance.rotor_pose)[slot]
        outward = np.array([frame.axis[0], frame.axis[1], 0.0])
        outward /= np.linalg.norm(outward)
        lean = math.radians(HURRIED_OUTWARD_LEAN_DEG)
        down = -(math.sin(lean) * outward + math.cos(lean) * np.array([0.0, 0.0, 1.0]))  # bottom first
        self._note(t=obs.sim_time, let_go_above=slot_name(slot), outward_lean_deg=HURRIED_OUTWARD_LEAN_DEG)
        return plan_insert(self.planner, obs.joint_positions, self._instance, centre, slot,
                           tube_open_width(self.spec.gripper), abandon_at=tuple(float(v) for v in frame.mouth),
                           abandon_axis=down)


class OppositeFromPixels(_WaitsForReadyLamp, PlannedMotionSystem):
    """Not privileged: finds the rotor, the seated tube and a standing tube in the front
    camera (tasks/centrifuge/perception.py) and inserts the standing tube opposite the
    seated one. The slot's place comes from the seen axis, the orange mark at slot 0 and
    the rotor's calibration (the seated tube says which slot is taken); without the mark,
    from the seated tube's own angle. With nothing seated (extended) the first tube goes
    into a slot drawn with the policy seed, counted from the mark. One try per tube."""

    name = "opposite_from_pixels"

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.tries = 0
        self.seated_first: int | None = None  # tubes seen seated at its first look

    def decide(self, obs: PolicyObservation, evaluator: EvaluatorView | None = None):
        from labference_ros.perception.vision import CameraCalibration
        from labference_ros.tasks.centrifuge.perception import sight, slot_at

        t = obs.sim_time
        if "front" not in obs.images or "front" not in obs.camera_calibration:
            raise ValueError("needs the front camera and its calibration")
        contract = contract_for("basic")  # the rotor and the tubes are the same in both conditions
        n = contract.rotor.n_slots
        seen = sight(obs.images["front"], CameraCalibration.from_dict(obs.camera_calibration["front"]), contract)
        entry = {"t": t, "axis": seen.centre, "index_angle": seen.index_angle,
                 "seated_angles": list(seen.seated_angles), "standing": [list(p) for p in seen.standing]}
        step = 2 * math.pi / n
        if self.seated_first is None:
            self.seated_first = len(seen.seated_angles)
        if len(seen.seated_angles) < self.seated_first + self.tries:  # the last insertion did not seat
            self._note(**entry, gave_up="not seated")
            self.finished = True
            return None
        if seen.centre is None or not seen.standing or len(seen.seated_angles) >= len(contract.tubes):
            self._note(**entry, done=True)
            self.finished = True
            return None
        if seen.seated_angles:
            taken = seen.seated_angles[0]
            if seen.index_angle is not None:  # the taken slot's index, counted from the mark
                k = round((taken - seen.index_angle) / step) % n
                angle = seen.index_angle + step * opposite(k, n)
            else:
                angle = taken + math.pi
        elif seen.index_angle is not None:
            angle = seen.index_angle + step * random.Random(f"centrifuge-first-slot:{self.policy_seed}").randrange(n)
        else:
            self._note(**entry, gave_up="no slot mark seen")
            self.finished = True
            return None
        mouth, axis = slot_at(seen, angle, contract)
        self.tries += 1
        self._note(**entry, target_angle=angle, mouth=[float(v) for v in mouth])
        return f"tube@{self.tries}", seen.standing[0], (mouth, axis)

    def plan_move(self, obs: PolicyObservation, move: tuple):
        _name, centre, (mouth, axis) = move
        return plan_insert_at(self.planner, obs.joint_positions, centre, mouth, axis,
                              tube_open_width(self.spec.gripper))
