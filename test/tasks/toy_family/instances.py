"""The toy family's instances: which pad the puck goes to, from the task seed."""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass

GENERATOR_VERSION = "toy-instances-v1"


@dataclass(frozen=True)
class ToyInstance:
    instance_id: str
    condition: str
    task_seed: int
    layout_seed: int
    policy_seed: int
    goal_pad: str

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "ToyInstance":
        return cls(**json.loads(text))

    @property
    def layout_hash(self) -> str:
        return hashlib.sha256(f"{self.layout_seed}".encode()).hexdigest()[:16]

    def public_instruction(self) -> str:
        return f"Put the puck on the {self.goal_pad} pad."


def generate(condition: str, n: int, task_seed: int, layout_seed: int, policy_seed: int) -> list[ToyInstance]:
    rng = random.Random(f"{GENERATOR_VERSION}:{task_seed}")
    return [ToyInstance(f"{condition}-{task_seed}-{i:04d}", condition, task_seed, layout_seed, policy_seed,
                        rng.choice(("left", "right"))) for i in range(n)]
