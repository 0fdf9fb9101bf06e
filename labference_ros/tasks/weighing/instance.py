"""A resolved weighing instance: what the evaluator fixes before an episode.

Task-state, layout and policy seeds are kept separate (paper 3.4, 8.3): the
task seed draws target, sample mass and start subset; the layout seed draws
nuisance placement; the policy seed goes to the tested system only.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class WeighingInstance:
    instance_id: str
    condition: str  # "basic" | "extended" | "hidden_event" | "heldout_blocks"
    task_seed: int
    layout_seed: int
    policy_seed: int
    target_g: float
    sample_mass_g: float  # hidden evaluator data
    initial_on_pan: tuple[str, ...] = ()  # standards on the pan at the start
    goal_set: tuple[str, ...] = ()  # W*: standards that must be on the pan at the end
    # Filled from the layout seed: object name -> (x, y) on the table, plus "balance".
    layout: dict[str, tuple[float, float]] = field(default_factory=dict)
    # Generation bookkeeping (evaluator side): answer stratum and matched-pair membership.
    stratum: str = ""
    pair_id: str = ""  # answer-changing pair: both members share the layout draw
    pair_role: str = ""  # "a" | "b"
    # The condition's external event (core.external_events.instance_record: name, window,
    # trigger_t drawn with the task seed); empty where the condition declares none.
    external_event: dict = field(default_factory=dict)
    # The cell's object binding its scene holds (contract.binding; empty: the default
    # objects) and, for a held-out binding, the instance of the rebound condition it is
    # the twin of (same draws, the default objects).
    binding: str = ""
    binding_twin: str = ""

    def to_json(self) -> str:
        data = asdict(self)
        for key in ("external_event", "binding", "binding_twin"):
            if not data[key]:
                del data[key]  # the instances of conditions without one keep their form (and hash)
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "WeighingInstance":
        data = json.loads(text)
        data["initial_on_pan"] = tuple(data.get("initial_on_pan", ()))
        data["goal_set"] = tuple(data.get("goal_set", ()))
        data["layout"] = {k: tuple(v) for k, v in data.get("layout", {}).items()}
        return cls(**data)

    @property
    def layout_hash(self) -> str:
        blob = json.dumps({k: [round(c, 6) for c in v] for k, v in sorted(self.layout.items())})
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def public_instruction(self) -> str:
        """The instruction a policy may see: target only, never the sample mass or W*
        (nor when the external event will happen: only that it must be waited for)."""
        text = (
            f"Bring the balance reading to {self.target_g:.0f} g by adding or removing the "
            "labeled standards (10, 20, 50, 100 g). The unlabeled sample stays on the pan. "
            "Release each standard on the pan or the table and wait for a stable reading."
        )
        if self.external_event:
            text += " " + READY_LAMP_RULE
        return text


# The hidden-event condition's public rule (systems recognise it in the instruction).
READY_LAMP_RULE = ("Do not touch the balance, the sample or the standards until the blue ready lamp "
                   "on the balance display is lit.")
