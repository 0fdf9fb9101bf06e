"""Placement-recall instances and their generator (paper 3.4, 4.3, 8.3).

Seeds stay separate: the task seed orders the answer strata (how the rack moves
during occlusion, the target's cap colour) and the distractors' local slots;
the layout seed draws the nuisance placement (the rack's pose within its
jitter, where the target tube starts on the table); the policy seed goes to
the tested system only.

Conditions (4.3): basic (an empty rack, the target alone, a stationary
occluded interval) and extended (three distractor tubes in the rack, the rack
stationary or turned 180 degrees about its centre during occlusion). Caps:
"same" (all four tubes look alike) or "distinct" (one colour each). The three
factors the paper balances are balanced separately: the strata cross every
rack movement with every target cap colour (distinct caps), each stratum once
per len(strata) instances in a task-seed order, so colour and movement are
balanced and independent; the distractors' local slots, drawn apart from
them, are balanced over each block of four instances, whose distractor
triples partition the twelve holes (every hole is occupied once per block).
"""
from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import asdict, dataclass, field, replace

from labference_ros.core import instance_lists
from labference_ros.tasks.placement_recall.rack import COLUMNS, LABELS, ROWS, RackPose, parse_label

GENERATOR_VERSION = "placement-gen-v2"  # v2: the condition names setting and caps
CONDITIONS = ("basic", "extended")
CAPS = ("same", "distinct")
# Held-out object bindings (docs/protocol.md#held-out-object-bindings): a condition that
# repeats another's instances from the same seeds with the cell description's binding in
# the scene -> (the condition it rebinds, the binding).
BINDING_CONDITIONS = {"heldout_tubes": ("basic-same", "slim_tubes")}
# The family's conditions as contracts, campaigns and reports name them: setting and caps,
# and the held-out bindings' conditions.
FAMILY_CONDITIONS = (*(f"{c}-{k}" for c in CONDITIONS for k in CAPS), *BINDING_CONDITIONS)


def split_condition(name: str) -> tuple[str, str]:
    """"extended-distinct" -> ("extended", "distinct"); a bare setting means same caps; a
    held-out binding's condition: the setting and caps of the condition it rebinds."""
    if name in BINDING_CONDITIONS:
        name = BINDING_CONDITIONS[name][0]
    setting, _, caps = name.partition("-")
    return setting, caps or "same"
TARGET = "tube_target"
DISTRACTORS = ("tube_d1", "tube_d2", "tube_d3")
# Rack movements during the occluded interval: the rack's yaw change about its centre.
MOVEMENTS = {"none": 0.0, "rotate_180": math.pi}
CAP_COLOURS = {"red": (210, 40, 40), "green": (40, 170, 60), "blue": (40, 90, 230), "yellow": (230, 200, 30)}
SAME_CAP = "blue"
RACK_CENTER = (0.48, 0.08, 0.036)  # nominal centre of the rack's top face; the layout seed jitters it
CENTER_JITTER_M = 0.02
YAW_JITTER_RAD = math.radians(10.0)
TARGET_START_XY = (0.40, -0.12)  # nominal place of the target tube, upright on the table
RELEASE_REGION = ((0.28, -0.30), (0.06, 0.05))  # marked table region: centre xy, half sizes


@dataclass(frozen=True)
class PlacementInstance:
    instance_id: str
    condition: str  # one of FAMILY_CONDITIONS: the setting and the caps, e.g. "extended-same"
    caps: str  # "same" | "distinct"
    task_seed: int
    layout_seed: int
    policy_seed: int
    rack_center: tuple[float, float, float]
    rack_yaw_rad: float
    movement: str  # a key of MOVEMENTS: what the occluded transition does to the rack
    target_start: tuple[float, float]  # the target's xy, upright on the table
    distractors: dict[str, str] = field(default_factory=dict)  # tube -> hole label, seated at the start
    cap_colours: dict[str, str] = field(default_factory=dict)  # tube -> a key of CAP_COLOURS
    stratum: str = ""
    # A checkpoint's handoff (oracle/checkpoints.py): the target already placed in this hole
    # by the start's prefix, so the referee starts after the placement. None: an episode.
    placed_hole: str | None = None
    # The cell's object binding its scene holds (contract.binding; empty: the default tubes)
    # and, for a held-out binding, the rebound condition's instance it is the twin of.
    binding: str = ""
    binding_twin: str = ""

    def to_json(self) -> str:
        data = asdict(self)
        if data["placed_hole"] is None:  # an episode's instance reads as it always did
            del data["placed_hole"]
        for key in ("binding", "binding_twin"):
            if not data[key]:
                del data[key]  # the default binding's instances keep their form (and hash)
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "PlacementInstance":
        data = json.loads(text)
        data["rack_center"] = tuple(data["rack_center"])
        data["target_start"] = tuple(data["target_start"])
        return cls(**data)

    def __post_init__(self):
        if self.condition not in FAMILY_CONDITIONS or split_condition(self.condition)[1] != self.caps:
            raise ValueError(f"instance {self.instance_id}: condition {self.condition!r} with caps {self.caps!r}; "
                             f"conditions: {', '.join(FAMILY_CONDITIONS)} (the caps as the condition names them)")

    @property
    def setting(self) -> str:
        """basic or extended (the condition without its caps)."""
        return split_condition(self.condition)[0]

    @property
    def rack_pose(self) -> RackPose:
        """The rack's pose before the occluded interval."""
        return RackPose(self.rack_center, self.rack_yaw_rad)

    @property
    def moved_rack_pose(self) -> RackPose:
        """The rack's pose after the occluded interval (its centre stays where it was)."""
        return RackPose(self.rack_center, self.rack_yaw_rad + MOVEMENTS[self.movement])

    @property
    def tubes(self) -> tuple[str, ...]:
        return (TARGET, *sorted(self.distractors))

    @property
    def layout_hash(self) -> str:
        blob = json.dumps({"rack": [round(c, 6) for c in (*self.rack_center, self.rack_yaw_rad)],
                           "target_start": [round(c, 6) for c in self.target_start]})
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def public_instruction(self) -> str:
        """What a policy may read: the task, never a hole label or the movement."""
        return ("Place the tube standing on the table into any empty hole of the rack and release it. "
                "The view will be blocked for a while. Afterwards, take the same tube out of the rack "
                "and set it down upright in the marked region on the table.")


def _layout(layout_seed: int) -> dict:
    rng = random.Random(f"{GENERATOR_VERSION}:layout:{layout_seed}")
    cx, cy, cz = RACK_CENTER
    center = (round(cx + rng.uniform(-CENTER_JITTER_M, CENTER_JITTER_M), 6),
              round(cy + rng.uniform(-CENTER_JITTER_M, CENTER_JITTER_M), 6), cz)
    yaw = round(rng.uniform(-YAW_JITTER_RAD, YAW_JITTER_RAD), 9)
    start = (round(TARGET_START_XY[0] + rng.uniform(-0.02, 0.02), 6),
             round(TARGET_START_XY[1] + rng.uniform(-0.02, 0.02), 6))
    return {"rack_center": center, "rack_yaw_rad": yaw, "target_start": start}


def _check(condition: str, caps: str) -> None:
    if condition not in CONDITIONS:
        raise ValueError(f"unknown placement-recall condition {condition!r}; conditions: {', '.join(CONDITIONS)}")
    if caps not in CAPS:
        raise ValueError(f"unknown cap condition {caps!r}; caps: {', '.join(CAPS)}")


def _distractor_blocks(rng: random.Random, n: int) -> list[tuple[str, ...]]:
    """n distractor triples, every four of them a partition of the twelve holes."""
    triples: list[tuple[str, ...]] = []
    while len(triples) < n:
        holes = list(LABELS)
        rng.shuffle(holes)
        triples += [tuple(sorted(holes[k:k + 3])) for k in range(0, len(holes), 3)]
    return triples[:n]


def strata(condition: str, caps: str) -> list[tuple[str, str]]:
    """(rack movement, target cap colour) in canonical order: every movement crossed with
    every colour, so that the colour is balanced independently of the movement."""
    _check(condition, caps)
    movements = list(MOVEMENTS) if condition == "extended" else ["none"]
    colours = list(CAP_COLOURS) if caps == "distinct" else [SAME_CAP]
    return [(m, c) for m in movements for c in colours]


def generate(condition: str, caps: str, n: int, task_seed: int, layout_seed: int,
             policy_seed: int) -> list[PlacementInstance]:
    """n instances of one condition and cap condition, each factor balanced in its own order."""
    _check(condition, caps)
    base = f"{GENERATOR_VERSION}:task:{condition}:{caps}:{task_seed}"
    plan = strata(condition, caps)
    random.Random(f"{base}:strata").shuffle(plan)
    triples = _distractor_blocks(random.Random(f"{base}:slots"), n) if condition == "extended" else [()] * n
    out = []
    for i in range(n):
        movement, target_colour = plan[i % len(plan)]
        distractors = dict(zip(DISTRACTORS, triples[i]))
        if caps == "distinct":
            others = [c for c in CAP_COLOURS if c != target_colour]
            random.Random(f"{base}:others:{i}").shuffle(others)
            cap_colours = {TARGET: target_colour, **dict(zip(DISTRACTORS, others))}
        else:
            cap_colours = {tube: SAME_CAP for tube in (TARGET, *DISTRACTORS)}
        cap_colours = {tube: c for tube, c in cap_colours.items() if tube == TARGET or tube in distractors}
        out.append(PlacementInstance(
            instance_id=f"{condition}-{caps}-{task_seed}-{i:04d}", condition=f"{condition}-{caps}", caps=caps,
            task_seed=task_seed * 1_000_003 + i, layout_seed=layout_seed + i, policy_seed=policy_seed + i,
            movement=movement, distractors=distractors, cap_colours=cap_colours,
            stratum=f"movement:{movement}:target_cap:{target_colour}", **_layout(layout_seed + i)))
    return out


def generate_condition(condition: str, n: int, task_seed: int, layout_seed: int,
                       policy_seed: int) -> list[PlacementInstance]:
    """n instances of one of the family's conditions (FAMILY_CONDITIONS; a bare setting
    means same caps). A held-out binding's condition: the instances of the condition it
    rebinds, drawn from the same seeds, renamed, each recording its binding and its twin."""
    if condition in BINDING_CONDITIONS:
        rebound, binding = BINDING_CONDITIONS[condition]
        return [replace(i, instance_id=condition + i.instance_id[len(i.condition):], condition=condition,
                        binding=binding, binding_twin=i.instance_id)
                for i in generate_condition(rebound, n, task_seed, layout_seed, policy_seed)]
    setting, caps = split_condition(condition)
    return generate(setting, caps, n, task_seed, layout_seed, policy_seed)


def checkpoint_starts(setting: str, caps: str, task_seed: int, layout_seed: int, policy_seed: int = 0,
                      blocks: int = 1) -> list[tuple[PlacementInstance, str]]:
    """The balanced checkpoint population (paper 4.3): (instance, hole the target is
    placed in by the start's prefix) for every hole of the rack under every rack movement
    of the setting, per block, so the denominator is fixed (12 basic starts, 24 extended,
    per block). The instances are the generator's, drawn as one list (movement and target
    colour balanced as it balances them). In distinct-cap starts every target colour takes
    one hole in each row and a different column in each, the columns shifting with the
    movement and the block (`_holes_by_colour`), so that colour is balanced against the
    row and spread over the columns. In extended starts the three distractors are redrawn
    among the holes that leave the target's hole and its neighbours across the rows empty
    (the fingers' room)."""
    movements = list(MOVEMENTS) if setting == "extended" else ["none"]
    per_block = len(LABELS) * len(movements)
    instances = generate(setting, caps, per_block * blocks, task_seed, layout_seed, policy_seed)
    out = []
    for block in range(blocks):
        drawn = instances[block * per_block:(block + 1) * per_block]
        for shift, movement in enumerate(movements):
            same = [inst for inst in drawn if inst.movement == movement]
            for inst, hole in zip(same, _holes_by_colour(same, 2 * shift + block)):
                if inst.distractors:
                    row, col = parse_label(hole)
                    blocked = {hole} | {f"{ROWS[r]}{col + 1}" for r in (row - 1, row + 1) if 0 <= r < len(ROWS)}
                    free = [h for h in LABELS if h not in blocked]
                    random.Random(f"{GENERATOR_VERSION}:checkpoint:{inst.instance_id}:{hole}").shuffle(free)
                    inst = replace(inst, distractors=dict(zip(sorted(inst.distractors), sorted(free[:3]))))
                out.append((replace(inst, instance_id=f"{inst.instance_id}-{hole}"), hole))
    return out


def _holes_by_colour(instances: list[PlacementInstance], shift: int) -> list[str]:
    """One hole per instance, every hole once: with one target colour, the holes in order;
    with four (three instances each), colour k's r-th instance takes row r, column
    (k + r + shift) mod 4 (a Latin arrangement: each colour once per row)."""
    colours = [inst.cap_colours[TARGET] for inst in instances]
    if len(set(colours)) == 1:
        return list(LABELS[:len(instances)])
    order = list(CAP_COLOURS)
    if any(colours.count(c) != len(ROWS) for c in order):
        raise ValueError(f"a distinct-cap block needs each target colour {len(ROWS)} times, got {colours}")
    seen: dict[str, int] = {}
    holes = []
    for colour in colours:
        row = seen.get(colour, 0)
        seen[colour] = row + 1
        holes.append(f"{ROWS[row]}{(order.index(colour) + row + shift) % COLUMNS + 1}")
    return holes


def write_instance_list(path, instances, meta: dict | None = None) -> None:
    instance_lists.write_instance_list(path, instances, GENERATOR_VERSION, meta)


def read_instance_list(path) -> list[PlacementInstance]:
    return instance_lists.read_instance_list(path, PlacementInstance.from_json)
