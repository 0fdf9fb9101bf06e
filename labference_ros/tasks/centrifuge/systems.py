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
"""
from __future__ import annotations

import random

from labference_ros.core.observation import PolicyObservation
from labference_ros.core.system import EvaluatorView
from labference_ros.tasks.centrifuge.contract import contract_for
from labference_ros.tasks.centrifuge.rotor import opposite, slot_frames, slot_index
from labference_ros.tasks.scripted_base import PlannedMotionSystem

RELEASE_DEPTH_M = 0.015  # the tube's bottom 15 mm into the bore when the fingers open: the bore holds it upright
CLEARANCE_M = 0.06  # a carried tube's bottom stays this far above the mouths


class _Loader(PlannedMotionSystem):
    """Shared: the move is (tube, its measured centre, the destination slot)."""

    privileged = True

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.intended: dict[str, int] = {}  # tube -> the slot this system meant it for

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
        instance = self._instance
        contract = contract_for(instance.condition)
        frame = slot_frames(contract.rotor, instance.rotor_pose)[slot]
        self.intended[tube] = slot
        return self.planner.plan_pick_insert(obs.joint_positions, centre, contract.tube.radius_m,
                                             contract.tube.length_m, frame.mouth, frame.axis,
                                             clear_z=float(frame.mouth[2]) + CLEARANCE_M,
                                             release_depth=RELEASE_DEPTH_M, open_width=self._open_width(contract))

    def _open_width(self, contract) -> float:
        """Open wide enough around the tube, and wider than the spec's grasp threshold
        (a narrower value would read as a grasp)."""
        gripper = self.spec.gripper
        return min(gripper.open_width_m, max(2 * contract.tube.radius_m + self.planner.settings.open_margin,
                                             gripper.grasp_below_m + 0.002))

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
        tube = pending[0]
        if tube in self.moved:  # its insertion did not seat it: no second try
            self._note(t=t, seated=seated, gave_up=tube)
            self.finished = True
            return None
        reference = self.reference_slot(seated, contract.tubes)
        if reference is None:
            slot = random.Random(f"centrifuge-first-slot:{self.policy_seed}").randrange(n)
        else:
            slot = opposite(reference, n)
        self._note(t=t, seated=seated, tube=tube, reference=reference, slot=slot)
        return tube, evaluator.positions[tube], slot

    def reference_slot(self, seated: dict[str, int], tubes) -> int | None:
        """The slot the next destination is opposite to (None: the first tube, any slot)."""
        return next(iter(seated.values()), None)


class ScriptedExpert(_Loader):
    name = "scripted_expert"


class PlanFollower(_Loader):
    name = "plan_follower"

    def reference_slot(self, seated: dict[str, int], tubes) -> int | None:
        for tube in tubes:  # where it meant the first tube to go, not where it went
            if tube in self.intended:
                return self.intended[tube]
        return super().reference_slot(seated, tubes)
