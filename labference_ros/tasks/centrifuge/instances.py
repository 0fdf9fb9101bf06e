"""Centrifuge instances and their generator (paper 3.4, 4.1, 8.1).

Seeds stay separate: the task seed orders the answer strata (which slot is
occupied, which rotor-angle bin) and draws the pair partners; the layout seed
draws the nuisance placement (the exact yaw within its bin, the rotor's
position, the tube stand); the policy seed goes to the tested system only.

Strata: basic balances (occupied slot) x (rotor-angle bin), 12 x 4 = 48,
each used once per 48 instances in a task-seed order; extended balances the
angle bin alone (nothing occupied). Controlled destination pairs (4.1): the
same layout draw, the second tube held ready over the rotor, the first
tube's actual slot differing between the members, so their legal sets at
the scored choice are disjoint.
"""
from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import asdict, dataclass, field, replace

from labference_ros.core import instance_lists
from labference_ros.core.external_events import instance_record
from labference_ros.tasks.centrifuge.contract import TUBES, contract_for
from labference_ros.tasks.centrifuge.rotor import RotorPose, opposite

GENERATOR_VERSION = "centrifuge-gen-v1"
YAW_BINS = 4  # rotor-angle strata over a full turn
ROTOR_CENTER = (0.50, 0.00, 0.11)  # nominal; the layout seed jitters it
CENTER_JITTER_M = 0.03
STAND_XY = (0.45, 0.25)  # nominal tube stand for tubes outside the rotor


@dataclass(frozen=True)
class CentrifugeInstance:
    instance_id: str
    condition: str  # "basic" | "extended" | "hidden_event" | "heldout_tubes"
    task_seed: int
    layout_seed: int
    policy_seed: int
    rotor_center: tuple[float, float, float]
    rotor_yaw_rad: float
    seated: dict[str, int] = field(default_factory=dict)  # tubes stably seated at the start
    stand: dict[str, tuple[float, float]] = field(default_factory=dict)  # outside tubes: xy on the stand
    held: str = ""  # a tube that starts held ready over the rotor (controlled destination checkpoints)
    stratum: str = ""
    pair_id: str = ""
    pair_role: str = ""
    # The condition's external event (core.external_events.instance_record: name, window,
    # trigger_t drawn with the task seed); empty where the condition declares none.
    external_event: dict = field(default_factory=dict)
    # The cell's object binding its scene holds (contract.binding; empty: the default tubes)
    # and, for a held-out binding, the rebound condition's instance it is the twin of.
    binding: str = ""
    binding_twin: str = ""

    def to_json(self) -> str:
        data = asdict(self)
        for key in ("external_event", "binding", "binding_twin"):
            if not data[key]:
                del data[key]  # the instances of conditions without one keep their form (and hash)
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "CentrifugeInstance":
        data = json.loads(text)
        data["rotor_center"] = tuple(data["rotor_center"])
        data["stand"] = {k: tuple(v) for k, v in data.get("stand", {}).items()}
        data["seated"] = {k: int(v) for k, v in data.get("seated", {}).items()}
        return cls(**data)

    @property
    def rotor_pose(self) -> RotorPose:
        return RotorPose(self.rotor_center, self.rotor_yaw_rad)

    @property
    def layout_hash(self) -> str:
        blob = json.dumps({"rotor": [round(c, 6) for c in (*self.rotor_center, self.rotor_yaw_rad)],
                           "stand": {k: [round(c, 6) for c in v] for k, v in sorted(self.stand.items())}})
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def public_instruction(self) -> str:
        """What a policy may read: the rule, never a slot number."""
        text = ("Load the two equal-mass tubes into opposite slots of the centrifuge rotor. "
                "Insert each tube fully and release it; the second tube goes opposite the slot "
                "the first one actually occupies.")
        return f"{text} {READY_LAMP_RULE}" if self.external_event else text


# The hidden-event condition's public rule (systems recognise it in the instruction).
READY_LAMP_RULE = "Do not touch the tubes or the rotor until the green ready lamp beside the centrifuge is lit."


def _layout(layout_seed: int, yaw_bin: int, tubes_outside) -> dict:
    rng = random.Random(f"{GENERATOR_VERSION}:layout:{layout_seed}")
    width = 2 * math.pi / YAW_BINS
    yaw = (yaw_bin + rng.uniform(0.1, 0.9)) * width
    cx, cy, cz = ROTOR_CENTER
    center = (round(cx + rng.uniform(-CENTER_JITTER_M, CENTER_JITTER_M), 6),
              round(cy + rng.uniform(-CENTER_JITTER_M, CENTER_JITTER_M), 6), cz)
    stand = {t: (round(STAND_XY[0] + 0.04 * i + rng.uniform(-0.01, 0.01), 6),
                 round(STAND_XY[1] + rng.uniform(-0.01, 0.01), 6)) for i, t in enumerate(tubes_outside)}
    return {"rotor_center": center, "rotor_yaw_rad": round(yaw, 9), "stand": stand}


def strata(condition: str) -> list[tuple[int | None, int]]:
    """(occupied slot or None, rotor-angle bin) in canonical order."""
    n = contract_for(condition).rotor.n_slots
    if contract_for(condition).initially_seated:  # basic, hidden_event: one tube seated
        return [(j, b) for j in range(n) for b in range(YAW_BINS)]
    return [(None, b) for b in range(YAW_BINS)]


def generate(condition: str, n: int, task_seed: int, layout_seed: int, policy_seed: int) -> list[CentrifugeInstance]:
    """n instances; every stratum once per len(strata) instances, in a task-seed order. A
    held-out binding's condition: its rebound condition's instances with its binding."""
    contract = contract_for(condition)
    if contract.rebinds:
        return [replace(i, instance_id=condition + i.instance_id[len(i.condition):], condition=condition,
                        binding=contract.binding or "", binding_twin=i.instance_id)
                for i in generate(contract.rebinds, n, task_seed, layout_seed, policy_seed)]
    plan = strata(condition)
    spec = contract_for(condition).external_event
    order = list(plan)
    random.Random(f"{GENERATOR_VERSION}:task:{condition}:{task_seed}").shuffle(order)
    out = []
    for i in range(n):
        occupied, yaw_bin = order[i % len(order)]
        seated = {TUBES[0]: occupied} if occupied is not None else {}
        outside = [t for t in TUBES if t not in seated]
        seed = task_seed * 1_000_003 + i
        out.append(CentrifugeInstance(
            instance_id=f"{condition}-{task_seed}-{i:04d}", condition=condition,
            task_seed=seed, layout_seed=layout_seed + i, policy_seed=policy_seed + i,
            seated=seated, stratum=f"slot:{'-' if occupied is None else occupied}:yaw_bin:{yaw_bin}",
            external_event=instance_record(spec, seed) if spec is not None else {},
            **_layout(layout_seed + i, yaw_bin, outside)))
    return out


def generate_pairs(n_pairs: int, task_seed: int, layout_seed: int, policy_seed: int) -> list[tuple]:
    """Controlled destination pairs: tube_a seated in slot j (member a) or k (member b),
    tube_b held ready; one layout draw per pair. Legal sets {Insert(tube_b, opposite(j))}
    and {Insert(tube_b, opposite(k))} are disjoint because j != k."""
    n = contract_for("basic").rotor.n_slots
    rng = random.Random(f"{GENERATOR_VERSION}:pairs:{task_seed}")
    pairs = []
    for i in range(n_pairs):
        j = i % n
        k = (j + rng.randrange(1, n)) % n
        yaw_bin = (i // n) % YAW_BINS
        layout = _layout(layout_seed + i, yaw_bin, [TUBES[1]])
        members = []
        for role, slot in (("a", j), ("b", k)):
            members.append(CentrifugeInstance(
                instance_id=f"pair-{task_seed}-{i:04d}{role}", condition="basic",
                task_seed=task_seed * 1_000_003 + i, layout_seed=layout_seed + i, policy_seed=policy_seed + i,
                seated={TUBES[0]: slot}, held=TUBES[1], stratum=f"slot:{slot}:yaw_bin:{yaw_bin}",
                pair_id=f"pair-{task_seed}-{i:04d}", pair_role=role, **layout))
        assert opposite(j, n) != opposite(k, n)
        pairs.append(tuple(members))
    return pairs



def settled_start_pairs(n_pairs: int, task_seed: int, layout_seed: int, policy_seed: int) -> list[tuple]:
    """Registered starts for the controlled destination test (paper 4.1), as checkpoint pairs on
    one extended instance each: the history says tube_a was inserted into slot j; in member
    "as_intended" it settled there, in "settled_elsewhere" it went into the next slot j+1 (what
    the robot physically did). The scored choice, tube_b's destination, has the disjoint
    reference sets {opposite(j)} and {opposite(j+1)}: a system that follows its plan instead of
    the outcome is right in the first and wrong in the second. Each start is
    (checkpoint_id, instance, prefix, executed): operations, executed None where it is the prefix."""
    from labference_ros.core.operations import insert
    from labference_ros.tasks.centrifuge.rotor import slot_name

    n = contract_for("extended").rotor.n_slots
    rng = random.Random(f"{GENERATOR_VERSION}:settled:{task_seed}")
    out = []
    for i, inst in enumerate(generate("extended", n_pairs, task_seed, layout_seed, policy_seed)):
        j = rng.randrange(n)
        meant = (insert(TUBES[0], slot_name(j)),)
        pair = f"settled-{task_seed}-{i:04d}"
        out.append((f"{pair}:as_intended", inst, meant, None))
        out.append((f"{pair}:settled_elsewhere", inst, meant, (insert(TUBES[0], slot_name((j + 1) % n)),)))
    return out


def write_instance_list(path, instances, meta: dict | None = None) -> None:
    """Instances (or pairs, flattened in order) to one JSON file (core.instance_lists)."""
    instance_lists.write_instance_list(path, instances, GENERATOR_VERSION, meta)


def read_instance_list(path) -> list[CentrifugeInstance]:
    return instance_lists.read_instance_list(path, CentrifugeInstance.from_json)
