"""The toy family's contract: a hashed, versioned record like every family's, with the
thresholds its referee uses (a family declares predicates and thresholds, core.protocol
supplies the rules)."""
from __future__ import annotations

from dataclasses import dataclass, field

from labference_ros.core.contracts import HashedContract

TASK = "toy_shuttle"
PUCK = "puck"


@dataclass(frozen=True)
class Opportunities:
    response_window_s: float = 60.0
    triggers: tuple[str, ...] = ("initial_readiness", "confirmed_change")


@dataclass(frozen=True)
class Diagnostics:
    sites: tuple[str, ...] = ("state", "decision")
    state_payload_keys: tuple[str, ...] = ("puck_on",)
    decision_payload_keys: tuple[str, ...] = ("operation",)
    hidden_keys: tuple[str, ...] = ("legal_set", "legal_operations", "reference_state", "state_json")


@dataclass(frozen=True)
class ToyContract(HashedContract):
    task: str
    condition: str
    version: str
    operation_types: tuple[str, ...] = ("insert", "wait", "stop")
    pads: dict = field(default_factory=lambda: {"left": (0.45, 0.15), "right": (0.45, -0.15)})
    pad_half_m: float = 0.04  # a square pad; the puck's centre inside it: on the pad
    puck_start: tuple[float, float] = (0.52, 0.0)
    puck_radius_m: float = 0.016
    puck_height_m: float = 0.040
    puck_mass_kg: float = 0.03
    rest_speed_mps: float = 0.01  # slower: at rest
    dwell_s: float = 0.5  # at rest on a pad, untouched, this long: placed there
    terminal_dwell_s: float = 1.0  # placed on the goal pad this long: complete
    opportunities: Opportunities = field(default_factory=Opportunities)
    diagnostics: Diagnostics = field(default_factory=Diagnostics)

    @property
    def evaluation_steps(self) -> tuple[str, ...]:
        return ("placed_on_goal",)


def contract_for(condition: str) -> ToyContract:
    if condition != "basic":
        raise ValueError(f"unknown toy_shuttle condition {condition!r}")
    return ToyContract(task=TASK, condition=condition, version="0.1.0")
