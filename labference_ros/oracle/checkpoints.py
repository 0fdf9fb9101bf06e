"""Checkpoint populations (paper 6.1): registered starts rebuilt from their
initialization and an optional operation prefix, verified at the handoff.

A population file is JSON lines, one registered start per line:
  {"checkpoint_id": ..., "task": FAMILY, "instance": {the family's instance},
   "prefix": [{"type", "object", "destination"}],
   "executed": [...],       (optional: what the robot physically did instead, e.g. a tube meant
                             for one slot that went into the next: the prefix is the history a
                             system is handed, the executed operations make the state)
   "fixed_subgoal": true}   (optional: a start of the fixed-subgoal population K)
A line without "task" is a start of tasks.DEFAULT_FAMILY (feedback weighing, whose
populations came first). Preparation failures stay in
the population with their reason: they are unresolved pairs, never silently dropped.

A prefix leaves an authorized action-observation record: before each prefix
operation, the policy observation a tested system would have received (the
same whitelist projection as in the graph) and the operation then carried
out. Every branch from the checkpoint hands the same record to its freshly
reset system (TestedSystem.receive_prefix), so stateful systems start from
the same history and stateless ones ignore it."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from labference_ros.core.measurements import LEFT_FINGER, RIGHT_FINGER
from labference_ros.core.operations import Operation
from labference_ros.skills.motion import PickPlacePlanner, PickPlaceSettings, PlanningError
from labference_ros.tasks import DEFAULT_FAMILY
from labference_ros.tasks import family as task_family
from labference_ros.tasks import family_of

from .world import Snapshot, World

DEFAULT_TASK = DEFAULT_FAMILY  # a population line without "task"
STILL_SPEED = 1e-3  # m/s: every object at rest at the handoff
SETTLE_LIMIT_S = 6.0  # at most this long waiting for a stable display
PREFIX_RATE_HZ = 100.0  # the reference planner's rate for prefix operations


@dataclass(frozen=True)
class CheckpointSpec:
    checkpoint_id: str
    instance: object  # the task family's instance
    prefix: tuple[Operation, ...] = ()
    # A fixed-subgoal start (paper eq. 6, population K): every branch from it gets the
    # correct operation and the reference geometry supplied (replace:decision and
    # replace:geometry), so what it measures is the physical execution.
    fixed_subgoal: bool = False
    # What the robot physically carried out, where it differs from the prefix the system
    # is handed as its own history (None: the prefix itself).
    executed: tuple[Operation, ...] | None = None

    @property
    def family(self):
        return family_of(self.instance)

    @property
    def operations(self) -> tuple[Operation, ...]:
        """The operations carried out to prepare the start."""
        return self.prefix if self.executed is None else self.executed

    def expected_state(self) -> dict:
        return self.family.start_state(self.instance, self.operations)

    def to_dict(self) -> dict:
        out = {"checkpoint_id": self.checkpoint_id, "instance": json.loads(self.instance.to_json()),
               "prefix": [op.to_dict() for op in self.prefix]}
        if self.family.name != DEFAULT_TASK:
            out["task"] = self.family.name
        if self.executed is not None:
            out["executed"] = [op.to_dict() for op in self.executed]
        if self.fixed_subgoal:
            out["fixed_subgoal"] = True
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "CheckpointSpec":
        fixed = d.get("fixed_subgoal", False)
        if not isinstance(fixed, bool):
            raise ValueError(f"checkpoint {d.get('checkpoint_id')!r}: fixed_subgoal must be true or false")
        family = task_family(str(d.get("task", DEFAULT_TASK)))
        executed = d.get("executed")
        return cls(str(d["checkpoint_id"]), family.instance_from_json(json.dumps(d["instance"])),
                   tuple(Operation.from_dict(o) for o in d.get("prefix", ())), fixed,
                   None if executed is None else tuple(Operation.from_dict(o) for o in executed))


@dataclass
class Checkpoint:
    spec: CheckpointSpec
    status: str  # "verified" | "preparation_failed"
    reason: str = ""
    snapshot: Snapshot | None = None
    t: float = 0.0
    state: dict = field(default_factory=dict)  # the verified task state at the handoff (TaskFamily.start_state)
    verification: dict = field(default_factory=dict)
    prefix_record: tuple[dict, ...] = ()  # {"observation": PolicyObservation, "operation", "t"} per prefix step

    @property
    def verified(self) -> bool:
        return self.status == "verified"


def write_population(path, specs) -> None:
    with open(path, "w") as f:
        for s in specs:
            f.write(json.dumps(s.to_dict(), sort_keys=True) + "\n")


def read_population(path) -> list[CheckpointSpec]:
    lines = Path(path).read_text().splitlines()
    specs = [CheckpointSpec.from_dict(json.loads(line)) for line in lines if line.strip()]
    ids = [s.checkpoint_id for s in specs]
    if len(set(ids)) != len(ids):
        raise ValueError("checkpoint ids must be unique in a population")
    return specs


def population_from_instances(instances, prefix=(), fixed_subgoal: bool = False) -> list[CheckpointSpec]:
    suffix = ":fixed" if fixed_subgoal else ""
    return [CheckpointSpec(f"{i.instance_id}:p{len(prefix)}{suffix}", i, tuple(prefix), fixed_subgoal)
            for i in instances]


def _run_prefix(world: World, op: Operation) -> None:
    planner = PickPlacePlanner(PickPlaceSettings(rate_hz=PREFIX_RATE_HZ))
    plan = world.family.plan_operation(planner, world.backend.joint_state().position[:7], world.instance,
                                       world.measure(), op)
    events = sorted(plan.gripper_events, key=lambda e: e.t)
    k = 0
    for i, row in enumerate(plan.arm_q):
        while k < len(events) and events[k].t <= i * plan.dt + 1e-9:
            e = events[k]
            world.backend.set_gripper(e.width, e.speed, e.force, e.epsilon_inner, e.epsilon_outer, e.grasp)
            k += 1
        check = world.backend.set_arm_targets(row)
        if not check.ok:
            raise PlanningError(check.reason)
        world.advance(plan.dt)


def verify(world: World, expected: dict) -> dict:
    """Handoff checks: the family's task state (weighing: the supported set; centrifuge:
    the seated slots), release (no finger on any object), rest, and a stable display
    where the family reads a balance."""
    m = world.measure()
    state = world.family.measured_start_state(m)
    held = sorted(n for n, o in m.objects.items() if {LEFT_FINGER, RIGHT_FINGER} & set(o.contacts))
    moving = sorted(n for n, o in m.objects.items() if o.linear_speed > STILL_SPEED)
    failures = []
    for key, want in expected.items():
        if state.get(key) != want:
            failures.append(f"{key}:{_short(state.get(key))}!={_short(want)}")
    if held:
        failures.append("not_released:" + ",".join(held))
    if moving:
        failures.append("not_at_rest:" + ",".join(moving))
    out = {**state, "held": held, "moving": moving}
    if world.family.reads_balance:
        out["stable"] = bool(world.reading is not None and world.reading.stable)
        if not out["stable"]:
            failures.append("display_not_stable")
    return {**out, "failures": failures}


def _short(value) -> str:
    """A state value as the failure reason names it (the supported set as a list, as ever)."""
    return str(sorted(value.items()) if isinstance(value, dict) else value)


def at_reset(instance, checkpoint_id: str | None = None) -> Checkpoint:
    """The start every graph episode has: the instance as reset, t = 0, nothing
    moved or settled. A continuation from it runs the episode the graph runs."""
    spec = CheckpointSpec(checkpoint_id or f"{instance.instance_id}:reset", instance)
    world = World(instance)
    try:
        return Checkpoint(spec, "verified", "", world.snapshot(), world.t, spec.expected_state(), {"at_reset": True})
    finally:
        world.close()


def prepare(spec: CheckpointSpec) -> Checkpoint:
    """Rebuild one registered start and verify it at the handoff."""
    world = World(spec.instance)
    record = []
    try:
        instruction = spec.instance.public_instruction()
        if spec.executed is not None and len(spec.executed) != len(spec.prefix):
            raise ValueError("a start's executed operations must match its prefix one for one")
        for op, done in zip(spec.prefix, spec.operations):
            _oid, obs = world.observe(instruction)
            record.append({"observation": obs, "operation": op.to_dict(), "t": world.t})
            _run_prefix(world, done)
        world.advance(0.5)
        settle_end = world.t + SETTLE_LIMIT_S
        while world.reading is not None and not world.reading.stable and world.t < settle_end:
            world.advance(0.1)
        expected = spec.expected_state()
        v = verify(world, expected)
        if v["failures"]:
            return Checkpoint(spec, "preparation_failed", ";".join(v["failures"]), t=world.t, verification=v)
        return Checkpoint(spec, "verified", "", world.snapshot(), world.t, {k: v[k] for k in expected}, v,
                          tuple(record))
    except (PlanningError, ValueError) as e:
        return Checkpoint(spec, "preparation_failed", f"{type(e).__name__}: {e}", t=world.t)
    finally:
        world.close()
