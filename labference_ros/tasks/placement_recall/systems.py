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
"""
from __future__ import annotations

import random

import numpy as np

from labference_ros.core.observation import PolicyObservation
from labference_ros.core.system import EvaluatorView
from labference_ros.tasks.centrifuge.moves import open_width
from labference_ros.tasks.placement_recall.contract import contract_for
from labference_ros.tasks.placement_recall.rack import LABELS, RackPose, hole_positions, parse_label
from labference_ros.tasks.scripted_base import PlannedMotionSystem

RELEASE_DEPTH_M = 0.022  # the tube's bottom this far below the top face when the fingers open
CLEARANCE_M = 0.06  # a carried tube's bottom stays this far above the rack's top face
TABLE_Z = 0.0


def occluded(obs: PolicyObservation) -> bool:
    """The front camera shows nothing (the occluder's blanked frames)."""
    image = obs.images.get("front")
    return image is not None and image.size > 0 and not np.any(image)


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


class _Recall(PlannedMotionSystem):
    """Shared: place, wait out the occlusion, retrieve from wherever `retrieval_point` says."""

    privileged = True

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.stage = "place"
        self.saw_occlusion = False
        self.chosen_hole: str | None = None
        self.released_at: np.ndarray | None = None  # the tube's centre where its hand let it go (world)
        self.remembered_hole: str | None = None  # the hole label the tube stood in before the occlusion

    def decide(self, obs: PolicyObservation, evaluator: EvaluatorView | None = None):
        if evaluator is None:
            raise ValueError(f"{self.name} is privileged: it needs the evaluator view")
        instance = evaluator.instance
        contract = contract_for(instance.condition)
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
            self.chosen_hole = hole
            pose = RackPose(tuple(evaluator.facts["rack_pose"][:3]), evaluator.facts["rack_pose"][3])
            mouth = hole_positions(contract.rack, pose)[hole]
            # Where its hand lets the tube go, in the world: the tube's centre once it stands
            # on the hole's floor below the mouth.
            self.released_at = mouth + np.array([0.0, 0.0, contract.tube.length_m / 2 - contract.rack.depth_m])
            self._note(t=t, operation={"type": "insert", "object": target, "destination": hole})
            return target, np.asarray(evaluator.positions[target], float), ("insert", mouth)
        if self.stage == "wait":
            if occluded(obs) or not self.saw_occlusion:
                return None
            self.stage = "retrieve"
        if self.stage == "retrieve":
            self.stage = "done"
            where = self.retrieval_point(evaluator)
            if where is None:  # nothing to reach for: it gives up
                self._note(t=t, gave_up="no retrieval point")
                self.finished = True
                return None
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
        return super().act(obs, evaluator)

    def retrieval_point(self, evaluator: EvaluatorView) -> np.ndarray | None:
        """Where the tube to retrieve stands (its centre, world), or None to give up."""
        raise NotImplementedError

    def plan_move(self, obs: PolicyObservation, move: tuple):
        _name, centre, (kind, where) = move
        contract = contract_for("basic")  # the tubes and the rack are the same in every condition
        tube = contract.tube
        width = open_width(self.spec.gripper)
        if kind == "insert":
            mouth = np.asarray(where, float)
            return self.planner.plan_pick_insert(obs.joint_positions, centre, tube.radius_m, tube.length_m, mouth,
                                                 (0.0, 0.0, -1.0), clear_z=float(mouth[2]) + CLEARANCE_M,
                                                 release_depth=RELEASE_DEPTH_M, open_width=width)
        return self.planner.plan_pick_set_down(obs.joint_positions, centre, tube.radius_m, tube.length_m, where,
                                               TABLE_Z, open_width=width)


class ScriptedExpert(_Recall):
    name = "scripted_expert"

    def retrieval_point(self, evaluator: EvaluatorView) -> np.ndarray:
        return np.asarray(evaluator.positions["tube_target"], float)


class WorldPosition(_Recall):
    name = "world_position"

    def retrieval_point(self, evaluator: EvaluatorView) -> np.ndarray:
        return self.released_at


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
        return np.asarray(evaluator.positions[pick], float)


class LabelMemory(_Recall):
    name = "label_memory"

    def retrieval_point(self, evaluator: EvaluatorView) -> np.ndarray | None:
        contract = contract_for(evaluator.instance.condition)
        if self.remembered_hole is None:  # it never saw its tube in the rack
            return None
        rack = evaluator.facts["rack_pose"]
        mouth = hole_positions(contract.rack, RackPose(tuple(rack[:3]), rack[3]))[self.remembered_hole]
        self._note(remembered_hole=self.remembered_hole)
        return mouth + np.array([0.0, 0.0, contract.tube.length_m / 2 - contract.rack.depth_m])
