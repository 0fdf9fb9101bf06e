"""Reference systems for placement recall.

Both pick the target standing on the table top-down, insert it bottom first into an
empty hole of the rack chosen with the policy seed (one whose neighbours along the
fingers' closing direction are empty, so the open fingers touch no other tube), and
withdraw. They wait through the occlusion (blanked camera frames, the public signal
that the view was blocked) and, once fresh images arrive, retrieve and set the tube
down upright in the marked region. They differ in where they reach for it:

- scripted_expert (privileged): where the target stands now (the evaluator view),
  whatever the rack did while the cameras were blocked.
- label_memory (privileged): the hole label the tube stood in when it last saw it, remembered,
  found again in the rack as it stands after the occlusion (the rack's measured pose). A
  stand-in for the paper's pixel-based system with memory: it reads the rack's pose from the
  evaluator view where that system would find the rack's edge colours and A1 mark in pixels.
- world_position (privileged only for its own placement): the world position of the hole
  it aimed its hand at when it let the tube go, remembered; it never looks again. The paper's memoryless
  behavioural error: right while the rack stays, wrong exactly where the rack moved
  (after a half turn it reaches into the hole that now stands there).
- label_memory_pixels (not privileged): the paper's pixel-based system with memory. It finds
  the rack (its coloured edges), the tubes in it and the tube on the table in the front
  camera's pixels (perception.py), inserts the tube into a free hole it sees, remembers the
  hole label its tube stands in on the last frame before the view is blocked (the hole that
  gained a cap; the one it aimed at if it cannot tell), and after the occlusion finds that
  label in the rack as it now stands and reaches for the cap it sees there.
- cap_colour_pixels (not privileged): places as label_memory_pixels does, but keeps only the
  cap colour of the tube it picked; after the occlusion it reaches for a cap of that colour it
  sees in the rack. The pixel counterpart of cap_colour.

Imperfect systems (paper 5.3: the mistakes real policies make; privileged, as scripted_expert):
- dropper: carries the tube down toward its chosen hole, then sets it down back on the table
  where it stood (a drop after a correct choice); it then places it again and goes on as the
  expert: a recovered completion.
- second_guess: after the occlusion its open hand first descends over a wrong hole, then
  retrieves the target from its own: a wrong first retrieval choice corrected, a recovered
  completion.
- hurried: lets its tube go tilted 16 degrees and only 13 mm into a free hole (the tube
  wedges against the hole's guide, beyond the 10-degree seating bound: an unfinished
  placement), and at once, without looking whether it seated, its open hand descends over
  another hole (the next step begun before the placement is confirmed: premature
  advancement); then it stops (early termination).

Oracle sites (paper 6; oracle_scope.py): every system here exposes state and decision,
each in Assist and Replace (both act on what is supplied, as weighing's hooked readers do).
Its state is where it takes the target to stand, in the rack's labels: its own is the hole
it would reach into (world_position: the hole now standing at the world position it
remembers, wrong after a turn); a supplied `target_hole` takes its place. Its decision
at the retrieval is Pick(target, that hole); a supplied Pick takes its place. Where the
hole it then reaches into differs from its own, its hand goes to that hole of the rack as
it stands now (the privileged systems: from the rack's measured pose; the pixel systems:
from the rack they see), else exactly where it would have gone. Each decision's original
and used outputs are logged (interface_log): the placement's (a supplied Insert takes its
place), the retrieval's, and, for a support that arrives after its placement and before
the occlusion, the Wait it holds then (its own state there: the hole it placed into).
"""
from __future__ import annotations

import random

import numpy as np

from labference_ros.core.observation import PolicyObservation
from labference_ros.core.operations import INSERT, PICK, WAIT_OP, Operation
from labference_ros.core.system import COMMITMENT_SOURCE, AcceptsSupports, EvaluatorView
from labference_ros.skills.motion import tube_open_width
from labference_ros.tasks.placement_recall.contract import contract_for
from labference_ros.tasks.placement_recall.rack import LABELS, RackPose, hole_positions, hole_under, parse_label
from labference_ros.tasks.scripted_base import PlannedMotionSystem

RELEASE_DEPTH_M = 0.022  # the tube's bottom this far below the top face when the fingers open
MAX_PLACEMENTS = 2  # the pixel systems' insertions of their tube, the first and one retry
# Looks at a placement it cannot confirm yet, one per 0.5 s hold: a tube that landed
# beside its hole may still be sliding into the next one.
PLACEMENT_LOOKS = 4
LOOK_AGAIN = ("look again",)  # _confirm_placement's answer: hold, then look once more
# The environment blocks the view within about a second of a confirmed placement and a
# withdrawn hand: waiting longer than this for it, the pixel systems stop.
OCCLUSION_WAIT_S = 10.0
CLEARANCE_M = 0.06  # a carried tube's bottom stays this far above the rack's top face
TABLE_Z = 0.0


def occluded(obs: PolicyObservation) -> bool:
    """The front camera shows nothing (the occluder's blanked frames)."""
    image = obs.images.get("front")
    return image is not None and image.size > 0 and not np.any(image)


def plan_tube_insert(planner, arm_q, tube_centre, mouth, open_width_m: float, tube=None):
    """A standing tube, picked top-down, inserted bottom first into the hole with this mouth
    (the systems' placements and a checkpoint start's prefix plan it alike). tube: its
    TubeGeometry (default: the default tubes, as a system not told a held-out binding assumes)."""
    tube = tube or contract_for("basic").tube
    mouth = np.asarray(mouth, float)
    return planner.plan_pick_insert(arm_q, np.asarray(tube_centre, float), tube.radius_m, tube.length_m, mouth,
                                    (0.0, 0.0, -1.0), clear_z=float(mouth[2]) + CLEARANCE_M,
                                    release_depth=RELEASE_DEPTH_M, open_width=open_width_m)


def free_holes(occupied) -> list[str]:
    """Empty holes whose neighbours in the same column (the fingers close across the
    rows, along the rack's short edge) are empty too."""
    taken = {parse_label(h) for h in occupied}
    out = []
    for label in LABELS:
        row, col = parse_label(label)
        if (row, col) not in taken and (row - 1, col) not in taken and (row + 1, col) not in taken:
            out.append(label)
    return out


class _Recall(AcceptsSupports, PlannedMotionSystem):
    """Shared: place, wait out the occlusion, retrieve from wherever `retrieval_point` says."""

    privileged = True
    INTERFACES = {"state": ("assist", "replace"), "decision": ("assist", "replace")}  # capability negotiation

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.supplied: dict[str, dict] = {}  # site -> the latest delivered payload
        self.interface_log: list[dict] = []  # original and used outputs per decision
        self._unanswered = False  # a support arrived that no decision has followed yet
        self.stage = "place"
        self.saw_occlusion = False
        self.chosen_hole: str | None = None
        self.released_at: np.ndarray | None = None  # the tube's centre where its hand let it go (world)
        self.remembered_hole: str | None = None  # the hole label the tube stood in before the occlusion
        self.commitments: list[dict] = []  # symbolic retrieval commitments not yet sent
        self.picked_hole: str | None = None  # cap_colour: the hole of the tube it reached for
        # The tubes' geometry it plans with: the default tubes', the instance's binding's once a
        # privileged decision has read the instance (the pixel systems are not told).
        self.tube = contract_for("basic").tube

    def receive_prefix(self, prefix: list[dict]) -> None:
        """A checkpoint's authorized history: the start's prefix placed the target (the
        reference planner's insertion), which this system takes as its own placement; it
        then waits for the occlusion as after one of its own."""
        target = contract_for("basic").target
        for step in prefix:
            op = step["operation"]
            if op["type"] == "insert" and op["object"] == target:
                self.before_placement(step["observation"])
                self.chosen_hole = op["destination"]
                self.moved.append(target)
                self.stage = "wait"
                self._note(prefix_placement=op["destination"])

    def before_placement(self, obs: PolicyObservation) -> None:
        """What it keeps of the view before a placement it did not plan itself."""

    # Oracle sites -------------------------------------------------------------
    def supply(self, site: str, mode: str, payload: dict) -> None:
        super().supply(site, mode, payload)
        self._unanswered = True

    def _held_wait(self, t: float) -> None:
        """Before the occlusion it holds a Wait: the decision a support delivered then is
        followed by (its own state: the hole it placed into)."""
        if not self._unanswered or self.saw_occlusion:
            return
        own = {"target_hole": self.chosen_hole}
        self.interface_log.append({"t": t, "state_original": own, "state_used": self._state_used(own),
                                   "operation_original": WAIT_OP.to_dict(), "operation_used": WAIT_OP.to_dict()})
        self._unanswered = False

    def _state_used(self, own: dict) -> dict:
        supplied = self.supplied.get("state", {}).get("target_hole")
        return {"target_hole": supplied} if supplied in LABELS else own

    def _placement_decision(self, t: float, own_hole: str) -> str:
        """The placement at its decision interface: its own Insert, or a supplied one in its
        place (the target is in no hole yet: its state says so). Logged; returns the hole."""
        target = contract_for("basic").target
        own = {"target_hole": None}
        chosen = used = Operation(INSERT, target, own_hole)
        supplied = self.supplied.get("decision", {}).get("operation")
        if supplied and supplied.get("type") == INSERT and supplied.get("destination") in LABELS:
            used = Operation.from_dict(supplied)
        self.interface_log.append({"t": t, "state_original": own, "state_used": self._state_used(own),
                                   "operation_original": chosen.to_dict(), "operation_used": used.to_dict()})
        self._unanswered = False
        return used.destination

    def _retrieval_decision(self, t: float, own_hole: str | None) -> str | None:
        """The retrieval at its interfaces: its own state (own_hole), the state it acts on
        (a supplied one in its place), its own Pick from that state and the Pick it carries
        out (a supplied one in its place). Logged; returns the hole it retrieves from."""
        target = contract_for("basic").target
        own = {"target_hole": own_hole}
        state = self._state_used(own)
        chosen = Operation(PICK, target, state["target_hole"]) if state["target_hole"] else None
        used = chosen
        supplied = self.supplied.get("decision", {}).get("operation")
        if supplied and supplied.get("type") == PICK and supplied.get("destination") in LABELS:
            used = Operation.from_dict(supplied)
        self.interface_log.append({"t": t, "state_original": own, "state_used": state,
                                   "operation_original": chosen.to_dict() if chosen else None,
                                   "operation_used": used.to_dict() if used else None})
        self._unanswered = False
        if used is not None and used.destination != own_hole:
            self._note(t=t, supported_hole=used.destination, own_hole=own_hole)
        return used.destination if used is not None else None

    def believed_hole(self, evaluator: EvaluatorView) -> str | None:
        """Its own state at the retrieval: the hole it takes the target to stand in, in the
        rack's labels (asked after retrieval_point)."""
        return self.committed_hole(evaluator)

    def tube_centre(self, evaluator: EvaluatorView, hole: str) -> np.ndarray:
        """Where a tube seated in `hole` stands (its centre), in the rack as measured now."""
        contract = contract_for(evaluator.instance.condition)
        rack = evaluator.facts["rack_pose"]
        mouth = hole_positions(contract.rack, RackPose(tuple(rack[:3]), rack[3]))[hole]
        return mouth + np.array([0.0, 0.0, contract.tube.length_m / 2 - contract.rack.depth_m])

    def decide(self, obs: PolicyObservation, evaluator: EvaluatorView | None = None):
        if evaluator is None:
            raise ValueError(f"{self.name} is privileged: it needs the evaluator view")
        instance = evaluator.instance
        contract = contract_for(instance.condition)
        self.tube = contract.tube  # the instance's binding's tubes
        target = contract.target
        t = obs.sim_time
        in_holes = dict(evaluator.facts.get("in_holes", {}))
        if self.stage == "place":
            if target in self.moved:  # its one placement is done: wait
                self.stage = "wait"
                self._note(t=t, placed=in_holes.get(target))
                return None
            choices = free_holes(in_holes.values())
            hole = random.Random(f"placement-hole:{self.policy_seed}").choice(choices)
            hole = self.chosen_hole = self._placement_decision(t, hole)
            pose = RackPose(tuple(evaluator.facts["rack_pose"][:3]), evaluator.facts["rack_pose"][3])
            mouth = hole_positions(contract.rack, pose)[hole]
            # Where its hand lets the tube go, in the world: the tube's centre once it stands
            # on the hole's floor below the mouth.
            self.released_at = mouth + np.array([0.0, 0.0, contract.tube.length_m / 2 - contract.rack.depth_m])
            self._note(t=t, operation={"type": "insert", "object": target, "destination": hole})
            return target, np.asarray(evaluator.positions[target], float), ("insert", mouth)
        if self.stage == "wait":
            self._held_wait(t)
            if occluded(obs) or not self.saw_occlusion:
                return None
            self.stage = "retrieve"
        if self.stage == "retrieve":
            self.stage = "done"
            where = self.retrieval_point(evaluator)
            committed = self.committed_hole(evaluator)
            own_hole = self.believed_hole(evaluator)
            hole = self._retrieval_decision(t, own_hole)
            if hole is not None and hole != own_hole:  # a supported hole: reach into it as the rack stands
                where, committed = self.tube_centre(evaluator, hole), hole
            if where is None:  # nothing to reach for: it gives up
                self._note(t=t, gave_up="no retrieval point")
                self.finished = True
                return None
            self.commit(committed)
            self._note(t=t, retrieve_at=where.tolist())
            return "retrieval", where, ("set_down", contract.release_region.center)
        self.finished = True
        return None

    def act(self, obs: PolicyObservation, evaluator: EvaluatorView | None = None) -> np.ndarray:
        # Every observation counts, also those that arrive while a move or a hold runs.
        self.saw_occlusion = self.saw_occlusion or occluded(obs)
        if evaluator is not None and not self.saw_occlusion and self.moved:
            # What it saw of its own placement, before the view was blocked.
            self.remembered_hole = evaluator.facts.get("in_holes", {}).get("tube_target") or self.remembered_hole
            if self.released_at is None and self.chosen_hole is not None:  # a checkpoint's placement
                rack = evaluator.facts["rack_pose"]
                contract = contract_for(evaluator.instance.condition)
                mouth = hole_positions(contract.rack, RackPose(tuple(rack[:3]), rack[3]))[self.chosen_hole]
                self.released_at = mouth + np.array([0.0, 0.0, contract.tube.length_m / 2 - contract.rack.depth_m])
        return super().act(obs, evaluator)

    def retrieval_point(self, evaluator: EvaluatorView) -> np.ndarray | None:
        """Where the tube to retrieve stands (its centre, world), or None to give up."""
        raise NotImplementedError

    def commit(self, hole: str | None) -> None:
        """The hole label it means to retrieve from, committed symbolically (the separately
        scored commitment track); where its hand goes is the native choice."""
        if hole is not None:
            operation = {"type": "pick", "object": contract_for("basic").target, "destination": hole}
            self.commitments.append({"operation": operation, "source": f"{COMMITMENT_SOURCE}{self.name}"})

    def drain_reports(self) -> list[dict]:
        out, self.commitments = self.commitments, []
        return out

    def plan_move(self, obs: PolicyObservation, move: tuple):
        _name, centre, (kind, where) = move
        width = tube_open_width(self.spec.gripper)
        if kind == "insert":
            return plan_tube_insert(self.planner, obs.joint_positions, centre, where, width, tube=self.tube)
        tube = self.tube
        return self.planner.plan_pick_set_down(obs.joint_positions, centre, tube.radius_m, tube.length_m, where,
                                               TABLE_Z, open_width=width)


    def committed_hole(self, evaluator: EvaluatorView) -> str | None:
        """The hole label it commits to for the retrieval (None: it names none)."""
        return None


class ScriptedExpert(_Recall):
    name = "scripted_expert"

    def retrieval_point(self, evaluator: EvaluatorView) -> np.ndarray:
        return np.asarray(evaluator.positions["tube_target"], float)

    def committed_hole(self, evaluator: EvaluatorView) -> str | None:
        return evaluator.facts.get("in_holes", {}).get("tube_target")


# The wrong hole second_guess's hand first descends over: this many labels on from the
# target's (the next row but one, two columns on: never a neighbour).
SECOND_GUESS_OFFSET = 6
# Its grip point's descent over that hole, above the rack's top face: from well above the
# caps of tubes standing 5 cm out of the rack down to 2 cm above them, and back.
SECOND_GUESS_HEIGHTS_M = (0.16, 0.07)


class Dropper(ScriptedExpert):
    """Its first placement is let go back on the table where the tube stood; then it
    places the tube again."""

    name = "dropper"

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.dropped = False
        self.retried = False

    def decide(self, obs: PolicyObservation, evaluator: EvaluatorView | None = None):
        target = contract_for("basic").target
        if self.stage == "place" and self.dropped and not self.retried and target in self.moved \
                and evaluator is not None and target not in evaluator.facts.get("in_holes", {}):
            self.retried = True
            self.moved.remove(target)  # the dropped tube: place it again
            self._note(t=obs.sim_time, retry="the tube is not in the rack")
        return super().decide(obs, evaluator)

    def plan_move(self, obs: PolicyObservation, move: tuple):
        _name, centre, (kind, where) = move
        if kind != "insert" or self.dropped:
            return super().plan_move(obs, move)
        self.dropped = True
        tube = self.tube
        spot = (float(centre[0]), float(centre[1]), float(centre[2]) - tube.length_m / 2)  # where it stood
        self._note(t=obs.sim_time, abandon_at=list(spot))
        return self.planner.plan_pick_insert(
            obs.joint_positions, np.asarray(centre, float), tube.radius_m, tube.length_m, np.asarray(where, float),
            (0.0, 0.0, -1.0), clear_z=float(where[2]) + CLEARANCE_M, release_depth=RELEASE_DEPTH_M,
            open_width=tube_open_width(self.spec.gripper), abandon_at=spot)


# hurried: the tube's lean from vertical when it is let go, and how deep its bottom's centre
# is then below the hole's mouth, along the tube. At rest in the 22 mm hole with its bottom on
# the floor it wedges against the far guide's top edge at 13.9 degrees (measured through the graph).
HURRIED_TILT_DEG = 16.0
HURRIED_RELEASE_DEPTH_M = 0.013


def lean_choices(occupied) -> list[tuple[str, int]]:
    """(hole, side): a free hole (free_holes) and the direction along its row (+1: towards
    column 4) in which its tube may lean, where the next hole that way holds no tube (or the
    rack ends), so the leaning tube touches only the guide."""
    taken = {parse_label(h) for h in occupied}
    out = []
    for label in free_holes(occupied):
        row, col = parse_label(label)
        for side in (1, -1):
            if (row, col + side) not in taken:
                out.append((label, side))
    return out


class Hurried(ScriptedExpert):
    """Lets its tube go tilted and shallow in a free hole, then, without looking whether it
    seated, descends its open hand over another hole, and stops."""

    name = "hurried"

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.went_on = False

    def decide(self, obs: PolicyObservation, evaluator: EvaluatorView | None = None):
        if evaluator is None:
            raise ValueError(f"{self.name} is privileged: it needs the evaluator view")
        contract = contract_for(evaluator.instance.condition)
        target = contract.target
        t = obs.sim_time
        rack = evaluator.facts["rack_pose"]
        pose = RackPose(tuple(rack[:3]), rack[3])
        mouths = hole_positions(contract.rack, pose)
        if target not in self.moved:
            in_holes = dict(evaluator.facts.get("in_holes", {}))
            hole, side = random.Random(f"placement-hole:{self.policy_seed}").choice(lean_choices(in_holes.values()))
            self.chosen_hole = hole
            tilt = np.radians(HURRIED_TILT_DEG)
            row_direction = pose.rotation()[:, 0] * side  # the rack's +x runs from column 1 to 4
            # Into the hole: down, and away from the side its top leans to.
            axis = -np.sin(tilt) * row_direction - np.array([0.0, 0.0, np.cos(tilt)])
            self._note(t=t, operation={"type": "insert", "object": target, "destination": hole},
                       lean_deg=HURRIED_TILT_DEG, lean_side=side)
            return target, np.asarray(evaluator.positions[target], float), ("lean", mouths[hole], axis)
        if not self.went_on:
            self.went_on = True
            other = LABELS[(LABELS.index(self.chosen_hole) + SECOND_GUESS_OFFSET) % len(LABELS)]
            self._note(t=t, went_on_over=other, seated_in=evaluator.facts.get("in_holes", {}).get(target))
            return "guess", mouths[other], ("guess", mouths[other], None)
        self._note(t=t, stopped=True, seated_in=evaluator.facts.get("in_holes", {}).get(target))
        self.finished = True
        return None

    def plan_move(self, obs: PolicyObservation, move: tuple):
        _name, centre, (kind, mouth, axis) = move
        if kind == "guess":
            high, low = (np.asarray(mouth, float) + [0.0, 0.0, h] for h in SECOND_GUESS_HEIGHTS_M)
            return self.planner.plan_tcp_moves(obs.joint_positions, [high, low, high])
        tube = contract_for("basic").tube
        return self.planner.plan_pick_insert(
            obs.joint_positions, np.asarray(centre, float), tube.radius_m, tube.length_m, np.asarray(mouth, float),
            axis, clear_z=float(mouth[2]) + CLEARANCE_M, release_depth=HURRIED_RELEASE_DEPTH_M,
            open_width=tube_open_width(self.spec.gripper))


class SecondGuess(ScriptedExpert):
    """After the occlusion its open hand first descends over a wrong hole, then it retrieves
    the target as the expert does."""

    name = "second_guess"

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.guessed = False

    def decide(self, obs: PolicyObservation, evaluator: EvaluatorView | None = None):
        move = super().decide(obs, evaluator)
        if move is None or move[0] != "retrieval" or self.guessed:
            return move
        self.guessed = True
        self.stage = "retrieve"  # the retrieval itself comes next, with its commitment
        self.commitments = []
        contract = contract_for(evaluator.instance.condition)
        own = evaluator.facts.get("in_holes", {}).get(contract.target) or LABELS[0]
        wrong = LABELS[(LABELS.index(own) + SECOND_GUESS_OFFSET) % len(LABELS)]
        rack = evaluator.facts["rack_pose"]
        mouth = hole_positions(contract.rack, RackPose(tuple(rack[:3]), rack[3]))[wrong]
        self._note(t=obs.sim_time, first_guess=wrong, own=own)
        return "guess", mouth, ("guess", mouth)

    def plan_move(self, obs: PolicyObservation, move: tuple):
        _name, _centre, (kind, mouth) = move
        if kind != "guess":
            return super().plan_move(obs, move)
        high, low = (np.asarray(mouth, float) + [0.0, 0.0, h] for h in SECOND_GUESS_HEIGHTS_M)
        return self.planner.plan_tcp_moves(obs.joint_positions, [high, low, high])


class WorldPosition(_Recall):
    name = "world_position"

    def retrieval_point(self, evaluator: EvaluatorView) -> np.ndarray:
        return self.released_at

    def committed_hole(self, evaluator: EvaluatorView) -> str | None:
        # It names the hole it aimed at when placing (right whenever the tube settled there);
        # its hand goes to where that hole was.
        return self.chosen_hole

    def believed_hole(self, evaluator: EvaluatorView) -> str | None:
        # Where it takes the tube to stand: the hole now at the world position it remembers
        # (after a half turn, another hole), none over a guide or beside the rack.
        if self.released_at is None:
            return None
        contract = contract_for(evaluator.instance.condition)
        rack = evaluator.facts["rack_pose"]
        return hole_under(self.released_at, contract.rack, RackPose(tuple(rack[:3]), rack[3])) or None


class CapColour(_Recall):
    """Tells the target from the other tubes by its cap colour alone: it takes the colour it
    saw on the target standing on the table and, after the occlusion, reaches for a tube
    in the rack with that cap (one drawn with the policy seed when several have it).
    Right in distinct-cap instances, at chance among the tubes in same-cap ones. It reads
    the caps' colours from the instance (the scene's description), a stand-in for seeing
    them; where the tubes stand it reads from the evaluator view."""

    name = "cap_colour"

    def retrieval_point(self, evaluator: EvaluatorView) -> np.ndarray | None:
        colours = evaluator.instance.cap_colours
        target = contract_for(evaluator.instance.condition).target
        in_holes = evaluator.facts.get("in_holes", {})
        alike = sorted(t for t in in_holes if colours.get(t) == colours[target])
        if not alike:  # no tube with its cap stands in the rack
            return None
        pick = random.Random(f"cap-colour:{self.policy_seed}").choice(alike)
        self._note(same_cap_tubes=alike, reached_for=pick)
        self.picked_hole = in_holes.get(pick)
        return np.asarray(evaluator.positions[pick], float)

    def committed_hole(self, evaluator: EvaluatorView) -> str | None:
        return self.picked_hole


class _PixelRecall(_Recall):
    """Pixels and the camera's calibration only; the rack's geometry, the cap colours and
    the marked region are the cell's and the task's (public), never the evaluator's. It
    places as the others do, into a free hole it sees; `retrieval_hole` says which hole
    it reaches into after the occlusion."""

    privileged = False

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.taken_before: set[str] = set()  # holes it saw holding a tube before its placement
        self.last_clear_frame: np.ndarray | None = None  # its last view of the rack before the occlusion
        self.tube_colour: str | None = None  # the cap colour of the tube it picked from the table
        self.placements = 0  # insertions tried
        self.looks = 0  # looks at an unconfirmed placement since the last insertion
        self.waiting_since: float | None = None  # when it began to wait for the occlusion

    def _sight(self, obs: PolicyObservation, image: np.ndarray | None = None):
        from labference_ros.perception.vision import CameraCalibration
        from labference_ros.tasks.placement_recall.perception import sight

        if "front" not in obs.images or "front" not in obs.camera_calibration:
            raise ValueError(f"{self.name} needs the front camera and its calibration")
        calib = CameraCalibration.from_dict(obs.camera_calibration["front"])
        return sight(obs.images["front"] if image is None else image, calib)

    def act(self, obs: PolicyObservation, evaluator: EvaluatorView | None = None) -> np.ndarray:
        was_occluded = self.saw_occlusion
        self.saw_occlusion = self.saw_occlusion or occluded(obs)
        placed = self.stage != "place" or (self.moved and self.cursor is None)
        if placed and not self.saw_occlusion:
            self.last_clear_frame = obs.images.get("front")
        if self.saw_occlusion and not was_occluded:
            self.on_occlusion(obs)
        return super().act(obs, None)

    def on_occlusion(self, obs: PolicyObservation) -> None:
        """The first blanked frame: what it keeps of the last clear one is its own affair."""

    def _confirm_placement(self, obs: PolicyObservation, t: float, contract):
        """After a placement: confirmed when a hole shows a cap it did not show before (the one
        it aimed at, or the one the tube settled in instead), or the cameras are blocked (the
        environment occludes only after a confirmed placement). Otherwise the tube did not
        seat. Seen standing on the table (it fell off the rack), it is picked up there and
        inserted again, MAX_PLACEMENTS in all; left leaning in the rack (on a guide, against
        another tube) it cannot be located from the front camera's caps alone, and the
        system stops (the referee records the unfinished placement and the early stop).
        None: go on (confirmed, or stopped); LOOK_AGAIN: hold and look once more."""
        if self.saw_occlusion or occluded(obs):
            return None
        seen = self._sight(obs)
        hole = self.chosen_hole
        gained = sorted(set(seen.seated) - self.taken_before)
        if seen.pose is not None and len(gained) == 1:
            self._note(t=t, placement_confirmed=gained[0], seen_gained=gained)
            return None
        if not seen.standing and self.looks < PLACEMENT_LOOKS:
            self.looks += 1  # it may still be settling into a hole: look again after a hold
            return LOOK_AGAIN
        if self.placements >= MAX_PLACEMENTS or not seen.standing:
            reason = "no tries left" if seen.standing else "its tube is not seen standing off the rack"
            self._note(t=t, placement_unconfirmed=hole, seen_gained=gained, gave_up=reason)
            self.finished = True
            return None
        mouth = seen.mouth(hole)
        where = np.asarray(seen.standing[0], float)
        self.placements += 1
        self.looks = 0
        self._note(t=t, placement_unconfirmed=hole, seen_gained=gained, retry_from=where.tolist(),
                   operation={"type": "insert", "object": contract.target, "destination": hole})
        return "tube", where, ("insert", mouth)

    def before_placement(self, obs: PolicyObservation) -> None:
        seen = self._sight(obs)
        self.taken_before = set(seen.seated)
        self.tube_colour = seen.caps.get("table:0")

    def retrieval_hole(self, seen, t: float) -> str | None:
        """The hole to reach into, in the rack as it is seen after the occlusion (None: give up)."""
        raise NotImplementedError

    def decide(self, obs: PolicyObservation, evaluator: EvaluatorView | None = None):
        contract = contract_for("basic")  # the rack, the tubes and the marked region are the same in every condition
        t = obs.sim_time
        if self.stage == "place":
            if self.moved:  # a placement ran: confirm it before going on, or try again
                retry = self._confirm_placement(obs, t, contract)
                if retry is LOOK_AGAIN:
                    return None
                if retry is None:
                    self.stage, self.waiting_since = "wait", t
                return retry
            seen = self._sight(obs)
            if seen.pose is None or not seen.standing:
                self._note(t=t, gave_up="no rack or no tube on the table seen", edge_pixels=seen.edge_pixels)
                self.finished = True
                return None
            self.taken_before = set(seen.seated)
            choices = free_holes(seen.seated)
            if not choices:
                self._note(t=t, gave_up="no free hole seen", seen_taken=sorted(seen.seated))
                self.finished = True
                return None
            hole = random.Random(f"placement-hole:{self.policy_seed}").choice(choices)
            hole = self.chosen_hole = self._placement_decision(t, hole)
            self.tube_colour = seen.caps.get("table:0")  # the caps of the tubes on the table, largest first
            mouth = seen.mouth(hole)
            self._note(t=t, rack_seen=[*seen.pose.center, seen.pose.yaw_rad], seen_taken=sorted(seen.seated),
                       tube_colour=self.tube_colour,
                       operation={"type": "insert", "object": contract.target, "destination": hole})
            self.placements += 1
            return "tube", np.asarray(seen.standing[0], float), ("insert", mouth)
        if self.stage == "wait":
            self._held_wait(t)
            if not self.saw_occlusion and self.waiting_since is not None \
                    and t - self.waiting_since >= OCCLUSION_WAIT_S - 1e-9:
                # The environment blocks the view only after a confirmed placement: none came.
                self._note(t=t, gave_up=f"no occlusion within {OCCLUSION_WAIT_S} s of its placement")
                self.finished = True
                return None
            if occluded(obs) or not self.saw_occlusion:
                return None
            self.stage = "done"
            seen = self._sight(obs)
            hole = None if seen.pose is None else self.retrieval_hole(seen, t)
            if seen.pose is not None:  # the retrieval at its interfaces (a supported hole in its place)
                hole = self._retrieval_decision(t, hole)
            if hole is None:
                if seen.pose is None:
                    self._note(t=t, gave_up="no rack seen after the occlusion")
                self.finished = True
                return None
            self.commit(hole)
            cap = seen.seated.get(hole)
            # The cap it sees in that hole says where the tube stands; without one, the hole's middle.
            where = seen.tube_centre(hole) if cap is None else np.array([cap[0], cap[1], seen.tube_centre(hole)[2]])
            self._note(t=t, rack_seen=[*seen.pose.center, seen.pose.yaw_rad], seen_taken=sorted(seen.seated),
                       reached_into=hole, cap_seen=cap is not None, retrieve_at=where.tolist())
            return "retrieval", where, ("set_down", contract.release_region.center)
        self.finished = True
        return None


class LabelMemoryPixels(_PixelRecall):
    """Remembers the hole label its tube stood in on the last clear frame and finds that
    label in the rack as it stands after the occlusion."""

    name = "label_memory_pixels"

    def on_occlusion(self, obs: PolicyObservation) -> None:
        if self.remembered_hole is None:
            self.remembered_hole = self._remember(obs)

    def _remember(self, obs: PolicyObservation) -> str | None:
        """The hole its tube stands in, on the last clear frame: the one that gained a cap."""
        if self.last_clear_frame is None:
            self._note(t=obs.sim_time, remembered_hole=self.chosen_hole, remembered_from="aimed (no clear frame)")
            return self.chosen_hole
        seen = self._sight(obs, self.last_clear_frame)
        gained = sorted(set(seen.seated) - self.taken_before)
        if len(gained) == 1:
            self._note(t=obs.sim_time, remembered_hole=gained[0], remembered_from="seen",
                       seen_taken=sorted(seen.seated))
            return gained[0]
        self._note(t=obs.sim_time, remembered_hole=self.chosen_hole, remembered_from="aimed",
                   seen_taken=sorted(seen.seated) if seen.pose else None)
        return self.chosen_hole

    def retrieval_hole(self, seen, t: float) -> str | None:
        if self.remembered_hole is None:
            self._note(t=t, gave_up="no hole remembered")
        return self.remembered_hole


class CapColourPixels(_PixelRecall):
    """Keeps no hole, only the cap colour of the tube it picked from the table, and after
    the occlusion reaches into a hole whose cap it sees in that colour (drawn with the
    policy seed when several have it): right in distinct-cap instances, at chance among
    the alike tubes in same-cap ones."""

    name = "cap_colour_pixels"

    def retrieval_hole(self, seen, t: float) -> str | None:
        alike = sorted(hole for hole in seen.seated if seen.caps.get(hole) == self.tube_colour)
        if self.tube_colour is None or not alike:
            self._note(t=t, gave_up=f"no {self.tube_colour or 'known'} cap seen in the rack",
                       seen_caps={h: seen.caps.get(h) for h in sorted(seen.seated)})
            return None
        hole = random.Random(f"cap-colour:{self.policy_seed}").choice(alike)
        self._note(t=t, tube_colour=self.tube_colour, same_cap_holes=alike, chosen=hole)
        return hole


class LabelMemory(_Recall):
    name = "label_memory"

    def retrieval_point(self, evaluator: EvaluatorView) -> np.ndarray | None:
        if self.remembered_hole is None:  # it never saw its tube in the rack
            return None
        self._note(remembered_hole=self.remembered_hole)
        return self.tube_centre(evaluator, self.remembered_hole)

    def committed_hole(self, evaluator: EvaluatorView) -> str | None:
        return self.remembered_hole
