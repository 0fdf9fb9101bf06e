"""Imperfect weighing reference systems: the scripted expert with one mistake that
real policies make, so the protocol's failure paths run through the graph and
their records can be checked (paper 4.2, 5.3, 7.2). Each knows the goal
(privileged), makes its mistake once and then completes the task:

- dropping_expert: grasps the first standard it has to move (a correct choice),
  lifts it a few centimetres and lets go over where it stood, so it falls back
  on the table; then picks it again and completes. The first choice gets
  credit and its execution fails (a drop); the completion is recovered.
- hurried_expert: moves fast and never waits for the balance: it adds first and
  then removes, and grasps the next standard as soon as it has let go of the
  previous one, while that placement is not confirmed yet (released, no stable
  reading), which the weighing contract makes premature advancement. Needs an
  instance with an addition followed by a removal (the extended condition, e.g.
  extended-0-0005).
- impatient_expert: the scripted expert that ignores an instruction's ready-lamp
  rule (the hidden-event condition): it starts at once, so its grasps before the
  lamp lights are premature interactions; it then completes.
- wrong_first_expert: first grasps a standard the goal does not call for,
  lifts it and sets it down where it stood, then makes the correct moves. The
  first choice is incorrect and that move fails; the completion is recovered.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from labference_ros.skills.motion import GripperEvent, MotionPlan, PickPlacePlanner, PickPlaceSettings
from labference_ros.tasks.weighing.systems.scripted import ScriptedExpert

DROP_LIFT_FRACTION = 0.35  # of the lift's duration: about a quarter of its height (min-jerk)
DROP_OPEN_S = 0.5  # fingers open, the hand holds still while the standard falls


class ImpatientExpert(ScriptedExpert):
    name = "impatient_expert"
    waits_for_ready_lamp = False


class DroppingExpert(ScriptedExpert):
    name = "dropping_expert"

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.dropped: str | None = None

    def plan_move(self, obs, move):
        plan = super().plan_move(obs, move)
        if self.dropped is not None:
            return plan
        name, _, _, dest = move
        self.dropped = name
        # It may take the standard again: the expert moves each (standard, destination) once.
        self._done.discard((name, dest))
        self._note(t=obs.sim_time, drops=name)
        return _drop_after_lift(plan)


def _drop_after_lift(plan: MotionPlan) -> MotionPlan:
    """The plan up to a little way into its lift, then the fingers open where the hand is."""
    starts = dict((label, t) for t, label in plan.labels)
    ends = sorted(t for t, _ in plan.labels if t > starts["lift"])
    lift_end = ends[0] if ends else plan.duration
    cut = int(round((starts["lift"] + DROP_LIFT_FRACTION * (lift_end - starts["lift"])) / plan.dt))
    hold = np.repeat(plan.arm_q[cut - 1][None, :], int(round(DROP_OPEN_S / plan.dt)), axis=0)
    events = [e for e in plan.gripper_events if e.t < cut * plan.dt]
    events.append(GripperEvent(cut * plan.dt, plan.gripper_events[0].width))
    labels = [(t, label) for t, label in plan.labels if t < cut * plan.dt] + [(cut * plan.dt, "drop")]
    return MotionPlan(dt=plan.dt, arm_q=np.concatenate([plan.arm_q[:cut], hold]), gripper_events=events,
                      labels=labels)


class HurriedExpert(ScriptedExpert):
    name = "hurried_expert"

    def __init__(self, spec=None, **params):
        params.setdefault("settle_s", 0.0)  # no wait for the balance between moves
        super().__init__(spec, **params)
        # Fast moves, short approaches and brief settles: a hand in a hurry.
        self.planner = PickPlacePlanner(PickPlaceSettings(
            rate_hz=self.spec.control_frequency_hz, max_speed=0.5, approach_height=0.05, arrive_settle_s=0.1,
            grasp_settle_s=0.3, release_settle_s=0.15))

    def plan_move(self, obs, move):
        """The move without its retreat: the next decision comes as the fingers open, and
        the next move starts by lifting the hand straight up out of the way."""
        q = np.asarray(obs.joint_positions, float)
        tcp, _ = self.planner.tcp_pose(q)
        lift = self.planner.plan_tcp_moves(q, [tcp + np.array([0.0, 0.0, self.planner.settings.approach_height])])
        plan = super().plan_move(_at(obs, lift.arm_q[-1]), move)
        retreat = dict((label, t) for t, label in plan.labels)["retreat"]
        cut = int(round(retreat / plan.dt))
        shift = lift.duration
        return MotionPlan(dt=plan.dt, arm_q=np.concatenate([lift.arm_q, plan.arm_q[:cut]]),
                          gripper_events=[replace(e, t=e.t + shift) for e in plan.gripper_events],
                          labels=[(0.0, "lift_clear")] + [(t + shift, label) for t, label in plan.labels if t < retreat])

    def moves(self, inst, evaluator) -> list[tuple[str, str]]:
        """Additions first, then the removals from the same pan: the hand goes from the
        standard it just let go of to the next one beside it on the pan."""
        add = [(n, "pan") for n in inst.goal_set if n not in evaluator.on_pan]
        remove = [(n, "table") for n in sorted(evaluator.on_pan) if n.startswith("std_") and n not in inst.goal_set]
        return add + remove


class WrongFirstExpert(ScriptedExpert):
    name = "wrong_first_expert"

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.wrong: str | None = None

    def decide(self, obs, evaluator=None):
        if self.wrong is not None or evaluator is None:
            return super().decide(obs, evaluator)
        inst = evaluator.instance
        # A standard on the table that the goal does not need: adding it is never legal.
        spare = sorted(n for n in inst.layout if n.startswith("std_") and n not in inst.goal_set
                       and n not in evaluator.on_pan and n in evaluator.positions)
        if not spare:
            return super().decide(obs, evaluator)
        self.wrong = spare[0]
        self._note(t=obs.sim_time, wrong_choice=self.wrong, destination="table")
        # Lifted and set down where it stands: the approach corrected before it reaches the pan.
        xyz = evaluator.positions[self.wrong]
        return self.wrong, xyz, (xyz[0], xyz[1]), "table"


def _at(obs, arm_q):
    """The observation with the arm where a plan before this one leaves it."""
    return replace(obs, joint_positions=np.asarray(arm_q, float))
