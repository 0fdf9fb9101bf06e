"""The toy family's contract: a hashed, versioned record like every family's."""
from __future__ import annotations

from dataclasses import dataclass

from labference_ros.core.contracts import HashedContract


@dataclass(frozen=True)
class ToyContract(HashedContract):
    task: str
    condition: str
    version: str
    pads: tuple[str, ...] = ("left", "right")
    dwell_s: float = 0.5  # the puck rests on a pad this long: placed


def contract_for(condition: str) -> ToyContract:
    if condition != "basic":
        raise ValueError(f"unknown toy_shuttle condition {condition!r}")
    return ToyContract(task="toy_shuttle", condition=condition, version="0.1.0")
