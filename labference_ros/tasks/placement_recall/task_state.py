"""Task state z_t, the update F and the legal set U(z_t) of placement recall
(paper 3.1, 4.3, 8.3).

z_t holds only confirmed physical outcomes and the environment's own
transition: the target is placed in a hole once the seating predicate confirmed
it there (the hole it actually settled in, which may differ from the one the
robot aimed at: the record keeps both), and the retrieval reference is that
hole. Pure functions of their arguments.

Phases and legal operations:
  place      the target is outside the rack: Insert(target, h) for every empty hole h
  withdraw   placed, the occluded transition has not happened yet: Wait
  retrieve   after the transition: Pick(target, placed hole), the hole in the rack's
             local labels (its world position may have changed)
  deliver    the target is out of the rack: Remove(target, table), into the marked region;
             once the terminal window held: Stop
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from labference_ros.core.protocol import dwell_complete, dwell_step
from labference_ros.core.operations import PICK, STOP_OP, WAIT_OP, Operation, insert, remove
from labference_ros.tasks.placement_recall.contract import PlacementContract
from labference_ros.tasks.placement_recall.rack import LABELS

PLACE, WITHDRAW, RETRIEVE, DELIVER = "place", "withdraw", "retrieve", "deliver"


def retrieve(tube: str, hole: str) -> Operation:
    """Pick(tube, hole): take the tube out of that hole (the hole is what is scored)."""
    return Operation(PICK, tube, hole)


@dataclass(frozen=True)
class TaskState:
    phase: str = PLACE
    occupied: dict = field(default_factory=dict)  # hole -> tube, confirmed (distractors from the start)
    intended_hole: str | None = None  # the placement's first directed approach
    placed_hole: str | None = None  # where the target was confirmed released and seated
    transitions: int = 0  # occluded environment transitions since the placement
    retrieved: bool = False
    terminal_dwell_s: float = 0.0
    terminal_holding: bool = False  # the terminal predicate held at the last sample
    physically_complete: bool = False
    complete_t: float | None = None
    evidence_version: int = 0

    @property
    def placement_deviation(self) -> bool:
        known = self.placed_hole is not None and self.intended_hole is not None
        return known and self.placed_hole != self.intended_hole

    @property
    def obligations(self) -> dict:
        return {"placement": {"status": "confirmed" if self.placed_hole else "open"},
                "retrieval": {"status": "confirmed" if self.retrieved else "open"},
                "delivery": {"status": "confirmed" if self.physically_complete else "open"}}

    def to_dict(self) -> dict:
        return {"phase": self.phase, "occupied": dict(sorted(self.occupied.items())),
                "intended_hole": self.intended_hole, "placed_hole": self.placed_hole,
                "placement_deviation": self.placement_deviation, "transitions": self.transitions,
                "retrieved": self.retrieved, "terminal_dwell_s": self.terminal_dwell_s,
                "physically_complete": self.physically_complete, "evidence_version": self.evidence_version}


def initial_state(distractors: dict[str, str], placed: tuple[str, str] | None = None) -> TaskState:
    """The instance's start: the distractors seated in their holes, the target outside;
    or, at a checkpoint's handoff, `placed` (tube, hole): the target placed there by the
    start's prefix, the occluded transition still to come."""
    occupied = {hole: tube for tube, hole in distractors.items()}
    if placed is None:
        return TaskState(occupied=occupied)
    tube, hole = placed
    return TaskState(phase=WITHDRAW, occupied={**occupied, hole: tube}, intended_hole=hole, placed_hole=hole)


def legal_set(contract: PlacementContract, z: TaskState) -> tuple[Operation, ...]:
    target = contract.target
    if z.phase == PLACE:
        return tuple(insert(target, h) for h in LABELS if h not in z.occupied)
    if z.phase == WITHDRAW:
        return (WAIT_OP,)
    if z.phase == RETRIEVE:
        return (retrieve(target, z.placed_hole),)
    return (STOP_OP,) if z.physically_complete else (remove(target),)


def note_intended(z: TaskState, hole: str) -> TaskState:
    """The placement's first directed approach (a choice, not an outcome): kept as the
    intended hole."""
    return z if z.intended_hole is not None else replace(z, intended_hole=hole)


def confirm_placed(z: TaskState, tube: str, hole: str) -> TaskState:
    """F for a confirmed placement: the target occupies the hole it actually settled in."""
    return replace(z, phase=WITHDRAW, occupied={**z.occupied, hole: tube}, placed_hole=hole,
                   evidence_version=z.evidence_version + 1)


def environment_transition(z: TaskState) -> TaskState:
    """F for the occluded environment transition after the placement: retrieval opens.
    A transition before the placement (or a second one) changes nothing the task
    depends on: local holes are kept by construction (eq. 10)."""
    if z.phase != WITHDRAW:
        return replace(z, transitions=z.transitions + (1 if z.placed_hole else 0))
    return replace(z, phase=RETRIEVE, transitions=z.transitions + 1, evidence_version=z.evidence_version + 1)


def confirm_retrieved(z: TaskState, tube: str) -> TaskState:
    """F for the target lifted out of its hole."""
    occupied = {h: t for h, t in z.occupied.items() if t != tube}
    return replace(z, phase=DELIVER, occupied=occupied, retrieved=True, evidence_version=z.evidence_version + 1)


def undo_retrieved(z: TaskState, tube: str, hole: str) -> TaskState:
    """F for a retrieved target that slipped back into a hole of the rack: retrieval
    is pending again, from the hole it now stands in (its actual place)."""
    return replace(z, phase=RETRIEVE, occupied={**z.occupied, hole: tube}, placed_hole=hole, retrieved=False,
                   terminal_dwell_s=0.0, terminal_holding=False, evidence_version=z.evidence_version + 1)


def note_failed_attempt(z: TaskState) -> TaskState:
    """A failed attempt (the target dropped, or released outside the region) changes no
    confirmed outcome, but it is new evidence: the retry is a new opportunity's choice."""
    return replace(z, evidence_version=z.evidence_version + 1)


def terminal_update(contract: PlacementContract, z: TaskState, t: float, dt: float, holds: bool) -> TaskState:
    """The terminal window: the retrieved target released upright and still in the marked
    region on the table, distractors in their holes, continuously for 3 s."""
    if z.physically_complete or z.phase != DELIVER:
        return z
    holding, dwell = dwell_step(z.terminal_holding, z.terminal_dwell_s, dt, holds)
    if holding and dwell_complete(dwell, contract.terminal.dwell_s):
        return replace(z, terminal_dwell_s=dwell, terminal_holding=True, physically_complete=True, complete_t=t,
                       evidence_version=z.evidence_version + 1)
    return replace(z, terminal_dwell_s=dwell, terminal_holding=holding)


__all__ = ["DELIVER", "PLACE", "RETRIEVE", "WITHDRAW", "TaskState", "confirm_placed",
           "confirm_retrieved", "environment_transition", "initial_state", "legal_set", "note_failed_attempt",
           "note_intended", "retrieve", "terminal_update", "undo_retrieved"]
