"""What the scripted reference systems of every task family share: a motion plan
replayed in chunks (skills/plan_replay.PlanCursor), holds between plans, and a log of
decisions kept for diagnostics (never sent to the evaluator). A family's system says
what to do next (decide) and how to move for it (plan_move)."""
from __future__ import annotations

import numpy as np

from labference_ros.core.observation import PolicyObservation
from labference_ros.core.system import EvaluatorView, TestedSystem
from labference_ros.skills.motion import MotionPlan, PickPlacePlanner, PickPlaceSettings, PlanningError
from labference_ros.skills.plan_replay import PlanCursor, plan_rows, row_held_after_refusal


class PlannedMotionSystem(TestedSystem):
    """Shared machinery: a queue of plans, holds in between, and a log of
    decisions (kept for diagnostics, never sent to the evaluator)."""

    def __init__(self, spec=None, **params):
        params.setdefault("settle_s", 1.5)  # hold after a move before deciding again
        super().__init__(spec, **params)
        self.planner = PickPlacePlanner(PickPlaceSettings(rate_hz=self.spec.control_frequency_hz))
        self.reset("", 0)

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.cursor: PlanCursor | None = None
        self.hold_until = -1.0
        self.last_row: np.ndarray | None = None
        self.held_row: np.ndarray | None = None
        self.moved: list[str] = []
        self.finished = False
        self.decisions: list[dict] = []

    # chunks ----------------------------------------------------------------
    def _hold(self, obs: PolicyObservation, seconds: float | None = None) -> np.ndarray:
        """Keep the last commanded row (or the measured state at the start)."""
        row = self.last_row if self.last_row is not None else self._state_row(obs)
        n = self.spec.max_chunk_length
        if seconds is not None:
            n = max(1, min(n, int(round(seconds * self.spec.control_frequency_hz))))
        return np.repeat(row[None, :], n, axis=0)

    def _state_row(self, obs: PolicyObservation) -> np.ndarray:
        row = np.zeros(self.spec.dim)
        row[:7] = obs.joint_positions
        row[self.spec.gripper_index] = min(obs.gripper_width, self.spec.gripper.open_width_m)
        if row[self.spec.gripper_index] < self.spec.gripper.grasp_below_m:
            row[self.spec.gripper_index] = self.spec.gripper.open_width_m
        return row

    def _emit(self, chunk: np.ndarray) -> np.ndarray:
        # The row the arm holds if this chunk is refused, and the one it holds once it ran.
        self.held_row, self.last_row = self.last_row, chunk[-1].copy()
        return chunk

    def act(self, obs: PolicyObservation, evaluator: EvaluatorView | None = None) -> np.ndarray:
        t = obs.sim_time
        if not obs.last_chunk_ran and self.held_row is not None:
            self.last_row = row_held_after_refusal(self.held_row, obs)
        if self.cursor is not None:
            self.cursor.follow_observation(obs, self.planner.retime)
            if not self.cursor.done(t):
                return self._emit(self.cursor.chunk(t, self.spec.max_chunk_length))
            self.cursor = None
            self.hold_until = t + self.params["settle_s"]
        if self.finished or t < self.hold_until - 1e-9:
            return self._emit(self._hold(obs, None if self.finished else self.hold_until - t))
        if self.awaiting_cue(obs):
            return self._emit(self._hold(obs, 0.5))  # look again in half a second
        move = self.decide(obs, evaluator)
        if move is None:
            return self._emit(self._hold(obs, 0.5))
        name = move[0]
        try:
            plan = self.plan_move(obs, move)
        except PlanningError as e:
            self.decisions.append({"t": t, "planning_error": str(e), "object": name})
            self.finished = True
            return self._emit(self._hold(obs))
        self.moved.append(name)
        self.cursor = PlanCursor(plan_rows(plan, self.spec), t, self.spec.hold_interval_s)
        return self._emit(self.cursor.chunk(t, self.spec.max_chunk_length))

    def awaiting_cue(self, obs: PolicyObservation) -> bool:
        """The instruction asks to wait for a cue the cameras will show (a hidden-event
        condition's lamp) and it has not been seen yet: hold still. Default: never."""
        return False

    def decide(self, obs, evaluator):
        """-> a move (a tuple whose first item names the object moved) or None to wait."""
        raise NotImplementedError

    def plan_move(self, obs: PolicyObservation, move: tuple) -> MotionPlan:
        """The motion of a move decide() returned, from the measured arm state."""
        raise NotImplementedError

    def _note(self, **entry) -> None:
        self.decisions.append(entry)
