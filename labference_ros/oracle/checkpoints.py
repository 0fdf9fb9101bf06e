"""Checkpoint populations (paper 6.1): registered starts rebuilt from their
initialization and an optional operation prefix, verified at the handoff.

A population file is JSON lines, one registered start per line:
  {"checkpoint_id": ..., "instance": {WeighingInstance}, "prefix": [{"type", "object", "destination"}],
   "fixed_subgoal": true}   (optional: a start of the fixed-subgoal population K)
Preparation failures stay in the population with their reason: they are
unresolved pairs, never silently dropped.

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

from labference_ros.tasks.weighing.instance import WeighingInstance
from labference_ros.core.measurements import LEFT_FINGER, PAN, RIGHT_FINGER
from labference_ros.tasks.weighing.objects import STANDARDS
from labference_ros.core.operations import Operation
from labference_ros.skills.motion import PlanningError
from labference_ros.tasks.weighing.moves import plan_to_pan, plan_to_table

from .executor import ReferenceExecutor
from .world import Snapshot, World

STILL_SPEED = 1e-3  # m/s: every object at rest at the handoff
SETTLE_LIMIT_S = 6.0  # at most this long waiting for a stable display


@dataclass(frozen=True)
class CheckpointSpec:
    checkpoint_id: str
    instance: WeighingInstance
    prefix: tuple[Operation, ...] = ()
    # A fixed-subgoal start (paper eq. 6, population K): every branch from it gets the
    # correct operation and the reference geometry supplied (replace:decision and
    # replace:geometry), so what it measures is the physical execution.
    fixed_subgoal: bool = False

    def expected_on_pan(self) -> frozenset:
        on = set(self.instance.initial_on_pan)
        for op in self.prefix:
            (on.add if op.destination == PAN else on.discard)(op.object)
        return frozenset(on)

    def to_dict(self) -> dict:
        out = {"checkpoint_id": self.checkpoint_id, "instance": json.loads(self.instance.to_json()),
               "prefix": [op.to_dict() for op in self.prefix]}
        if self.fixed_subgoal:
            out["fixed_subgoal"] = True
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "CheckpointSpec":
        fixed = d.get("fixed_subgoal", False)
        if not isinstance(fixed, bool):
            raise ValueError(f"checkpoint {d.get('checkpoint_id')!r}: fixed_subgoal must be true or false")
        return cls(str(d["checkpoint_id"]), WeighingInstance.from_json(json.dumps(d["instance"])),
                   tuple(Operation.from_dict(o) for o in d.get("prefix", ())), fixed)


@dataclass
class Checkpoint:
    spec: CheckpointSpec
    status: str  # "verified" | "preparation_failed"
    reason: str = ""
    snapshot: Snapshot | None = None
    t: float = 0.0
    on_pan: frozenset = frozenset()
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
    ex = ReferenceExecutor(world)
    move = ex.locate(op)
    if move is None:
        raise PlanningError(f"prefix operation {op} is infeasible")
    name, xyz, dest_xy, dest = move
    to = plan_to_pan if dest == "pan" else plan_to_table
    plan = to(ex.planner, world.backend.joint_state().position[:7], name, xyz, dest_xy)
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


def verify(world: World, expected_on_pan: frozenset) -> dict:
    """Handoff checks: supported set, release (no finger on any object), rest, stable display."""
    m = world.measure()
    on_pan = frozenset(n for n, o in m.objects.items() if n in STANDARDS and PAN in o.contacts)
    held = sorted(n for n, o in m.objects.items() if {LEFT_FINGER, RIGHT_FINGER} & set(o.contacts))
    moving = sorted(n for n, o in m.objects.items() if o.linear_speed > STILL_SPEED)
    stable = bool(world.reading is not None and world.reading.stable)
    failures = []
    if on_pan != expected_on_pan:
        failures.append(f"supported_set:{sorted(on_pan)}!={sorted(expected_on_pan)}")
    if held:
        failures.append("not_released:" + ",".join(held))
    if moving:
        failures.append("not_at_rest:" + ",".join(moving))
    if not stable:
        failures.append("display_not_stable")
    return {"on_pan": sorted(on_pan), "held": held, "moving": moving, "stable": stable,
            "failures": failures}


def at_reset(instance, checkpoint_id: str | None = None) -> Checkpoint:
    """The start every graph episode has: the instance as reset, t = 0, nothing
    moved or settled. A continuation from it runs the episode the graph runs."""
    spec = CheckpointSpec(checkpoint_id or f"{instance.instance_id}:reset", instance)
    world = World(instance)
    try:
        return Checkpoint(spec, "verified", "", world.snapshot(), world.t, frozenset(instance.initial_on_pan),
                          {"at_reset": True})
    finally:
        world.close()


def prepare(spec: CheckpointSpec) -> Checkpoint:
    """Rebuild one registered start and verify it at the handoff."""
    world = World(spec.instance)
    record = []
    try:
        instruction = spec.instance.public_instruction()
        for op in spec.prefix:
            _oid, obs = world.observe(instruction)
            record.append({"observation": obs, "operation": op.to_dict(), "t": world.t})
            _run_prefix(world, op)
        world.advance(0.5)
        settle_end = world.t + SETTLE_LIMIT_S
        while not world.reading.stable and world.t < settle_end:
            world.advance(0.1)
        v = verify(world, spec.expected_on_pan())
        if v["failures"]:
            return Checkpoint(spec, "preparation_failed", ";".join(v["failures"]), t=world.t, verification=v)
        return Checkpoint(spec, "verified", "", world.snapshot(), world.t, frozenset(v["on_pan"]), v, tuple(record))
    except (PlanningError, ValueError) as e:
        return Checkpoint(spec, "preparation_failed", f"{type(e).__name__}: {e}", t=world.t)
    finally:
        world.close()
