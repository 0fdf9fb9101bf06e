"""The toy family's referee: grasp and release recognised (tasks.grasping), the choice is the
pad the released puck lands on, confirmed once it rests there; complete when it has rested on
the instruction's pad for the terminal dwell. The protocol's bookkeeping is RefereeCore's."""
from __future__ import annotations

from dataclasses import dataclass, replace

from labference_ros.core.operations import STOP_OP, WAIT_OP, insert
from labference_ros.core.protocol import OTHER_DESTINATION
from labference_ros.core.referee_core import RefereeCore
from labference_ros.tasks.grasping import ROBOT_CONTACTS, GraspTracker
from toy_family.contract import PUCK


@dataclass(frozen=True)
class ToyState:
    on_pad: str | None = None  # where the puck was last confirmed at rest
    terminal_dwell_s: float = 0.0
    physically_complete: bool = False
    complete_t: float | None = None
    evidence_version: int = 0

    def to_dict(self) -> dict:
        return {"on_pad": self.on_pad, "terminal_dwell_s": self.terminal_dwell_s,
                "physically_complete": self.physically_complete, "evidence_version": self.evidence_version}


def pad_under(contract, position) -> str | None:
    for pad, (x, y) in contract.pads.items():
        if abs(position[0] - x) <= contract.pad_half_m and abs(position[1] - y) <= contract.pad_half_m:
            return pad
    return None


class Referee(RefereeCore):
    def __init__(self, contract, instance, episode_id: str = "episode", session_id: str = "",
                 deadline_s: float | None = None):
        super().__init__(contract, episode_id, session_id, deadline_s)
        self.instance = instance
        self.z = ToyState()
        self.grasp = GraspTracker()
        self._rest_since: float | None = None

    def step(self, m) -> list[dict]:
        ended, first, dt = self._begin_step(m.t)
        if ended is not None:
            return ended
        if first:
            self.z = replace(self.z, evidence_version=1)
            self._event("episode_start", m.t, detail={"instance_id": self.instance.instance_id})
            self._open_evidence(m.t, "initial_readiness")
        o = m.objects.get(PUCK)
        if o is not None:
            self._track(m, o, dt)
        for opp in self.book.expire(m.t):
            self._opportunity_closed(opp)
        if self.z.physically_complete and not self.finished:
            self._event("task_complete", m.t, detail={"on_pad": self.z.on_pad})
            return self._flush(m.t) + self.finish(m.t, "completed")[:-1]
        return self._flush(m.t)

    def _track(self, m, o, dt: float) -> None:
        t, pad = m.t, pad_under(self.contract, o.position)
        seen = self.grasp.step(m, o)
        if seen == "grasp":
            self._event("grasp", t, obj=PUCK, attempt=self.grasp.attempt)
        elif seen == "release":
            self._event("release", t, obj=PUCK, attempt=self.grasp.attempt)
            if pad is not None:  # the choice: the pad it was let go over
                op = insert(PUCK, pad)
                kind, opp = self._identify_choice(op, PUCK, t, self.grasp.attempt)
                self._begin_execution(PUCK, op, -1 if kind == "unscored" else opp.id, t,
                                      kind in ("first", "repeat"))
        at_rest = o.linear_speed <= self.contract.rest_speed_mps and not set(o.contacts) & set(ROBOT_CONTACTS)
        if pad is not None and at_rest and pad != self.z.on_pad:
            self._rest_since = t if self._rest_since is None else self._rest_since
            if t - self._rest_since >= self.contract.dwell_s - 1e-9:
                self._placed(pad, t)
        else:
            self._rest_since = None
        holds = at_rest and pad == self.z.on_pad == self.instance.goal_pad
        self.z = replace(self.z, terminal_dwell_s=self.z.terminal_dwell_s + dt if holds else 0.0)
        if holds and self.z.terminal_dwell_s >= self.contract.terminal_dwell_s - 1e-9 \
                and not self.z.physically_complete:
            self.z = replace(self.z, physically_complete=True, complete_t=t)

    def _placed(self, pad: str, t: float) -> None:
        self._rest_since = None
        self.z = replace(self.z, on_pad=pad, evidence_version=self.z.evidence_version + 1, terminal_dwell_s=0.0)
        self._event("placement_confirmed", t, obj=PUCK, detail={"pad": pad})
        ex = self._executions.get(PUCK)
        if ex is not None:
            ok = ex["operation"].destination == pad
            self._settle_execution(PUCK, t, ok, failure=OTHER_DESTINATION, detail={"on_pad": pad})
            if ok:
                self._resolve_errors(t, PUCK, by="placement_confirmed")
        self._open_evidence(t, "confirmed_change")

    def legal_set(self):
        if self.z.on_pad == self.instance.goal_pad:
            return (STOP_OP,) if self.z.physically_complete else (WAIT_OP,)
        return (insert(PUCK, self.instance.goal_pad),)

    def check_intervention(self, intervention: dict, t: float) -> list[dict]:
        return self._scoped_intervention(intervention, t, self.contract.diagnostics,
                                         operation_types=self.contract.operation_types)
