"""Task state z_t, the state update F (paper eq. 1) and the legal set U(z_t, g).

z_t is evaluator data built only from confirmed physical events: a standard is
"on the pan" in z_t once its release, support, stillness and a stable reading
have been confirmed, never because a policy meant to put it there. Everything
here is a pure function of its arguments.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from labference_ros.tasks.weighing.contract import TaskContract
from labference_ros.core.measurements import PAN, TABLE
from labference_ros.tasks.weighing.objects import SAMPLE, STANDARDS
from labference_ros.core.operations import STOP_OP, WAIT_OP, Operation, add, remove

ELSEWHERE = "elsewhere"  # released and still, but not cleanly on the pan or the table
LOCATIONS = (PAN, TABLE, ELSEWHERE)
_EPS = 1e-9


@dataclass(frozen=True)
class Goal:
    target_g: float
    goal_set: frozenset  # W*
    sample: str = SAMPLE

    def wants_on_pan(self, obj: str) -> bool:
        return obj == self.sample or obj in self.goal_set


def relation_satisfied(goal: Goal, obj: str, location: str) -> bool:
    """Goal relation of one object: goal standards and the sample on the pan, others off it."""
    return (location == PAN) if goal.wants_on_pan(obj) else (location != PAN)


@dataclass(frozen=True)
class ConfirmedEvent:
    """A physical outcome confirmed from measurements (input e_{t+1} to F)."""

    kind: str  # "support" | "reading_ready"
    t: float
    object: str = ""
    location: str = ""
    measured_g: float | None = None
    attempt: int = 0
    after_attempt: bool = False  # the object was grasped since its last confirmation


@dataclass(frozen=True)
class PhysicalEvidence:
    t: float
    confirmed: tuple[ConfirmedEvent, ...] = ()
    terminal_holds: bool = False
    terminal_failures: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskState:
    locations: dict  # object -> pan | table | elsewhere (confirmed)
    reading_ready: bool = False
    last_stable_reading_g: float | None = None
    # object -> {"goal": "pan"|"off_pan", "status": "open"|"confirmed", "instance": k, ...}
    obligations: dict = field(default_factory=dict)
    attempts: dict = field(default_factory=dict)
    terminal_holding: bool = False
    terminal_dwell_s: float = 0.0
    physically_complete: bool = False
    complete_t: float | None = None
    evidence_version: int = 0
    evidence_time: float = 0.0
    evidence_trigger: str = ""

    @property
    def supported_standards(self) -> frozenset:
        return frozenset(o for o, loc in self.locations.items() if loc == PAN and o in STANDARDS)

    @property
    def sample_on_pan(self) -> bool:
        return self.locations.get(SAMPLE) == PAN

    def to_dict(self) -> dict:
        return {
            "locations": dict(sorted(self.locations.items())),
            "supported_standards": sorted(self.supported_standards),
            "sample_on_pan": self.sample_on_pan,
            "reading_ready": self.reading_ready,
            "last_stable_reading_g": self.last_stable_reading_g,
            "obligations": {k: dict(v) for k, v in sorted(self.obligations.items())},
            "attempts": dict(sorted(self.attempts.items())),
            "terminal_dwell_s": round(self.terminal_dwell_s, 6),
            "physically_complete": self.physically_complete,
            "evidence_version": self.evidence_version,
        }


def _obligation(goal: Goal, obj: str, instance: int) -> dict:
    return {"goal": PAN if goal.wants_on_pan(obj) else "off_pan", "status": "open", "instance": instance}


def initial_state(goal: Goal, initial_on_pan, objects=STANDARDS) -> TaskState:
    locations = {o: (PAN if o in initial_on_pan else TABLE) for o in objects}
    locations[goal.sample] = PAN
    obligations = {
        o: _obligation(goal, o, 1) for o, loc in locations.items() if not relation_satisfied(goal, o, loc)
    }
    return TaskState(locations=locations, obligations=obligations, attempts={o: 0 for o in locations})


def update(contract: TaskContract, goal: Goal, z: TaskState, e: PhysicalEvidence, dt: float):
    """z_{t+1} = F(z_t, e_{t+1}, dt). Returns (new state, list of transition notes)."""
    notes: list[dict] = []
    locations = z.locations
    obligations = z.obligations
    attempts = z.attempts
    ready, last_g = z.reading_ready, z.last_stable_reading_g
    bump = ""  # trigger of the evidence change, if any
    for ev in e.confirmed:
        if ev.kind == "reading_ready":
            if not ready:
                ready, last_g = True, ev.measured_g
                notes.append({"category": "stable_reading", "t": ev.t, "measured_g": ev.measured_g})
                bump = "confirmed_change"
            continue
        if ev.kind != "support":
            raise ValueError(f"unknown confirmed event {ev.kind!r}")
        if ev.measured_g is not None:
            last_g = ev.measured_g
        if attempts.get(ev.object, 0) != ev.attempt:
            attempts = {**attempts, ev.object: ev.attempt}
        prev = locations.get(ev.object, TABLE)
        if prev == ev.location:
            if ev.after_attempt:  # an observable failed attempt: evidence changed, state did not
                bump = bump or "failed_attempt"
            continue
        locations = {**locations, ev.object: ev.location}
        notes.append({"category": "support_change", "t": ev.t, "object": ev.object, "from": prev,
                      "to": ev.location, "measured_g": ev.measured_g, "attempt": ev.attempt})
        bump = "confirmed_change"
        was_ok = relation_satisfied(goal, ev.object, prev)
        now_ok = relation_satisfied(goal, ev.object, ev.location)
        record = obligations.get(ev.object)
        if now_ok and not was_ok and record is not None and record["status"] == "open":
            # Keyed by (object, instance): a later touch without a new transition
            # cannot complete the same obligation again.
            done = {**record, "status": "confirmed", "t": ev.t, "attempt": ev.attempt,
                    "measured_g": ev.measured_g}
            obligations = {**obligations, ev.object: done}
            notes.append({"category": "obligation_confirmed", "t": ev.t, "object": ev.object,
                          "obligation": f"{ev.object}:{done['goal']}#{done['instance']}",
                          "attempt": ev.attempt, "measured_g": ev.measured_g})
        elif was_ok and not now_ok:
            instance = (record["instance"] + 1) if record else 1
            opened = _obligation(goal, ev.object, instance)
            obligations = {**obligations, ev.object: opened}
            notes.append({"category": "obligation_opened", "t": ev.t, "object": ev.object,
                          "obligation": f"{ev.object}:{opened['goal']}#{instance}",
                          "regression": record is not None, "attempt": ev.attempt})

    holding, dwell, complete, complete_t = z.terminal_holding, z.terminal_dwell_s, z.physically_complete, z.complete_t
    if not complete:
        if e.terminal_holds:
            if holding:
                dwell += dt
            else:
                holding, dwell = True, 0.0
                notes.append({"category": "terminal_dwell_started", "t": e.t})
            if dwell >= contract.terminal.dwell_s - _EPS:
                complete, complete_t = True, e.t
                notes.append({"category": "task_complete", "t": e.t, "dwell_s": dwell})
                bump = "confirmed_change"
        elif holding:
            notes.append({"category": "terminal_dwell_reset", "t": e.t, "dwell_s": dwell,
                          "failures": list(e.terminal_failures)})
            holding, dwell = False, 0.0

    version, ev_time, trigger = z.evidence_version, z.evidence_time, z.evidence_trigger
    if bump:
        version, ev_time, trigger = version + 1, e.t, bump
    if (not bump and not notes and locations is z.locations and obligations is z.obligations
            and attempts is z.attempts and ready == z.reading_ready and last_g == z.last_stable_reading_g
            and holding == z.terminal_holding and dwell == z.terminal_dwell_s):
        return z, notes  # nothing changed: most measurements (the state is immutable)
    z2 = replace(z, locations=locations, reading_ready=ready, last_stable_reading_g=last_g,
                 obligations=obligations, attempts=attempts, terminal_holding=holding,
                 terminal_dwell_s=dwell, physically_complete=complete, complete_t=complete_t,
                 evidence_version=version, evidence_time=ev_time, evidence_trigger=trigger)
    return z2, notes


def legal_set(contract: TaskContract, goal: Goal, z: TaskState) -> tuple[Operation, ...]:
    """U(z_t, g): the operations a correct policy may choose now, sorted."""
    if not z.sample_on_pan:
        return ()  # irreversible violation: nothing restores a valid run
    if z.physically_complete:
        return (STOP_OP,) if contract.exposes_stop else ()
    if not z.reading_ready:
        return (WAIT_OP,) if contract.exposes_wait else ()
    on_pan = z.supported_standards
    if on_pan == goal.goal_set:
        # Goal arrangement reached; the terminal window is still running.
        ops = [WAIT_OP] if contract.exposes_wait else []
        if contract.exposes_stop and not contract.stop_requires_completion:
            ops.append(STOP_OP)
        return tuple(sorted(ops))
    ops = [remove(o) for o in on_pan - goal.goal_set] + [add(o) for o in goal.goal_set - on_pan]
    return tuple(sorted(ops))


def operation_for_grasp(z: TaskState, obj: str) -> Operation:
    """The operation a grasp of obj identifies, judged on the state before contact."""
    return remove(obj) if z.locations.get(obj, TABLE) == PAN else add(obj)
