"""The toy family's reference system: the privileged expert carries the puck onto the pad
the instruction names (tasks.scripted_base: plan replay in chunks and holds)."""
from __future__ import annotations

from labference_ros.tasks.scripted_base import PlannedMotionSystem
from toy_family.contract import PUCK, contract_for


class ToyExpert(PlannedMotionSystem):
    privileged = True

    def decide(self, obs, evaluator):
        if evaluator is None or self.moved:
            return None  # one move: the puck onto its pad
        return (PUCK, evaluator.positions[PUCK], evaluator.instance.goal_pad)

    def plan_move(self, obs, move):
        _, xyz, pad = move
        c = contract_for("basic")
        return self.planner.plan_pick_set_down(obs.joint_positions, xyz, c.puck_radius_m, c.puck_height_m,
                                               c.pads[pad], 0.0)
