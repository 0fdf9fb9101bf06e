"""Task state z_t, the update F and the legal set U(z_t) of centrifuge loading
(paper 3.1, 4.1).

z_t holds only confirmed physical outcomes: a tube occupies a slot once the
insertion predicate confirmed it (insertion.py), never because a policy meant
to put it there. The record keeps the intended first slot beside the
resulting occupancy. Pure functions of their arguments.

Legal operations (the scored choice is the insertion destination):
  - a tube pending while another is seated in slot j: Insert(tube, opposite(j));
  - no tube seated (extended): Insert(tube, s) for any pending tube and any empty s
    whose opposite is empty too;
  - a shallow or unreleased insertion leaves that tube's placement unfinished:
    the pending operation concerns that tube (Insert of it, any legal slot);
  - both seated in opposite slots: Wait until the terminal window completes, then Stop;
  - both seated but not opposite: Pick the tube that made it so (a recovery).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from labference_ros.core.protocol import dwell_complete, dwell_step
from labference_ros.core.operations import STOP_OP, WAIT_OP, Operation, insert, pick
from labference_ros.tasks.centrifuge.contract import CentrifugeContract
from labference_ros.tasks.centrifuge.rotor import opposite, slot_name


@dataclass(frozen=True)
class TaskState:
    seated: dict = field(default_factory=dict)  # tube -> slot index (confirmed)
    seated_order: tuple = ()  # tubes in the order they were confirmed
    unfinished: dict = field(default_factory=dict)  # tube -> slot of a shallow/unreleased insertion
    attempts: dict = field(default_factory=dict)  # tube -> insertion attempts recognised
    first_intended_slot: int | None = None  # the record: where the first insertion was aimed
    terminal_dwell_s: float = 0.0
    terminal_holding: bool = False  # the terminal predicate held at the last sample
    physically_complete: bool = False
    complete_t: float | None = None
    evidence_version: int = 0

    @property
    def obligations(self) -> dict:
        """Each tube's placement: confirmed once seated (scores.json `obligations`)."""
        return {t: {"status": "confirmed" if t in self.seated else "open"}
                for t in sorted({*self.seated, *self.attempts, *self.unfinished})}

    def to_dict(self) -> dict:
        return {"seated": {t: slot_name(s) for t, s in sorted(self.seated.items())},
                "unfinished": {t: slot_name(s) for t, s in sorted(self.unfinished.items())},
                "attempts": dict(sorted(self.attempts.items())),
                "first_intended_slot": None if self.first_intended_slot is None else slot_name(
                    self.first_intended_slot),
                "terminal_dwell_s": self.terminal_dwell_s, "physically_complete": self.physically_complete,
                "evidence_version": self.evidence_version}


def initial_state(contract: CentrifugeContract, seated: dict[str, int]) -> TaskState:
    """The instance's start: the tubes already stably seated (basic: one)."""
    if len(seated) != contract.initially_seated:
        raise ValueError(f"{contract.contract_id} starts with {contract.initially_seated} seated tube(s), "
                         f"got {sorted(seated)}")
    return TaskState(seated=dict(seated), seated_order=tuple(sorted(seated)))


def opposite_pair(contract: CentrifugeContract, z: TaskState) -> bool:
    slots = list(z.seated.values())
    n = contract.rotor.n_slots
    return len(slots) == 2 and opposite(slots[0], n) == slots[1]


def legal_set(contract: CentrifugeContract, z: TaskState) -> tuple[Operation, ...]:
    n = contract.rotor.n_slots
    pending = [t for t in contract.tubes if t not in z.seated]
    if not pending:
        if opposite_pair(contract, z):
            return (STOP_OP,) if z.physically_complete else (WAIT_OP,)
        return (pick(z.seated_order[-1]),)  # the second tube went elsewhere: take it out again
    occupied = set(z.seated.values())
    if occupied:
        (j,) = occupied  # one tube seated: the destination follows from where it actually is
        target = opposite(j, n)
        return tuple(sorted(insert(t, slot_name(target)) for t in pending)) if target not in occupied else ()
    # Nothing seated: any empty slot with an empty opposite; an unfinished tube comes first.
    tubes = [t for t in pending if t in z.unfinished] or pending
    return tuple(sorted(insert(t, slot_name(s)) for t in tubes for s in range(n)
                        if s not in occupied and opposite(s, n) not in occupied))


def confirm_seated(z: TaskState, tube: str, slot: int) -> TaskState:
    """F for a confirmed insertion: the tube occupies the slot it actually settled in."""
    unfinished = {t: s for t, s in z.unfinished.items() if t != tube}
    order = tuple(t for t in z.seated_order if t != tube) + (tube,)
    return replace(z, seated={**z.seated, tube: slot}, seated_order=order, unfinished=unfinished,
                   evidence_version=z.evidence_version + 1)


def confirm_unfinished(z: TaskState, tube: str, slot: int) -> TaskState:
    """F for a released tube that did not seat (shallow, tilted, on the rim): its
    placement is unfinished and the pending operation concerns it."""
    return replace(z, unfinished={**z.unfinished, tube: slot}, evidence_version=z.evidence_version + 1)


def confirm_removed(z: TaskState, tube: str) -> TaskState:
    """F for a seated tube taken out of its slot (picked up again)."""
    seated = {t: s for t, s in z.seated.items() if t != tube}
    return replace(z, seated=seated, seated_order=tuple(t for t in z.seated_order if t != tube),
                   terminal_dwell_s=0.0, terminal_holding=False, evidence_version=z.evidence_version + 1)


def note_failed_attempt(z: TaskState) -> TaskState:
    """A failed attempt (the tube dropped away from the rotor) changes no occupancy,
    but it is new evidence: the retry is a new opportunity's choice."""
    return replace(z, evidence_version=z.evidence_version + 1)


def note_attempt(z: TaskState, tube: str, slot: int) -> TaskState:
    """A recognised insertion attempt (a choice, not an outcome): the first one's
    slot is kept as the intended first slot."""
    first = z.first_intended_slot if z.first_intended_slot is not None or z.seated else slot
    return replace(z, attempts={**z.attempts, tube: z.attempts.get(tube, 0) + 1}, first_intended_slot=first)


def terminal_update(contract: CentrifugeContract, z: TaskState, t: float, dt: float, holds: bool) -> TaskState:
    """The terminal window: both tubes in opposite slots, continuously for exactly 3 s
    from the first sample at which they are (core.protocol.dwell_step)."""
    if z.physically_complete:
        return z
    holding, dwell = dwell_step(z.terminal_holding, z.terminal_dwell_s, dt, holds and opposite_pair(contract, z))
    if dwell_complete(dwell, contract.terminal.dwell_s) and holding:
        return replace(z, terminal_dwell_s=dwell, terminal_holding=True, physically_complete=True, complete_t=t,
                       evidence_version=z.evidence_version + 1)
    if holding == z.terminal_holding and dwell == z.terminal_dwell_s:
        return z
    return replace(z, terminal_dwell_s=dwell, terminal_holding=holding)
