"""Support conditions, capability negotiation and payloads (paper 6.2-6.3).

A support is mode:site (assist|replace : state|decision|geometry|skill); a
condition is one support or a joint "+"-list of them. Payloads carry only
what the authorized observations certify (state) or one legal operation
chosen by a registered rule (decision); the task validator checks them
before delivery."""
from __future__ import annotations

from dataclasses import dataclass

from labference_ros.core.oracle_scope import MODES

SITES = ("state", "decision", "geometry", "skill")
COMPATIBLE = "compatible"


@dataclass(frozen=True, order=True)
class Support:
    mode: str
    site: str

    def __post_init__(self):
        if self.mode not in MODES or self.site not in SITES:
            raise ValueError(f"unknown support {self.mode}:{self.site}; modes {MODES}, sites {SITES}")

    def __str__(self) -> str:
        return f"{self.mode}:{self.site}"


def parse_condition(text: str) -> tuple[Support, ...]:
    """'replace:state' or 'assist:state+replace:decision' -> supports."""
    out = []
    for part in text.split("+"):
        mode, _, site = part.strip().partition(":")
        out.append(Support(mode, site))
    return tuple(sorted(out))


def condition_name(cond: tuple[Support, ...]) -> str:
    return "+".join(str(s) for s in cond) if cond else "base"


def parse_launch_support(text: str) -> tuple[Support, ...]:
    """The `support` launch argument: "none" (or empty) is the base system."""
    text = (text or "").strip()
    return () if text in ("", "none", "base") else parse_condition(text)


CHECKPOINT_CONTINUATION = "checkpoint_continuation"


def intervention_identity(cond: tuple[Support, ...], protocol: str) -> dict:
    """run.json's intervention section. protocol: "full_rollout" (support from
    the episode's start, in the graph) or "checkpoint_continuation" (matched
    branches from a verified checkpoint); the report keeps them apart."""
    if not cond:
        return {"mode": "none"}
    return {"mode": "+".join(sorted({s.mode for s in cond})), "site": "+".join(s.site for s in cond),
            "condition": condition_name(cond), "protocol": protocol}


def compatibility(system, support: Support) -> str:
    """Capability preflight: 'compatible' or an explicit compatibility status."""
    interfaces = system.interfaces()
    if interfaces is None:
        return "incompatible:action_only"
    if support.site not in interfaces:
        return f"incompatible:no_{support.site}_interface"
    if support.mode not in interfaces[support.site]:
        return f"incompatible:{support.mode}_not_accepted_at_{support.site}"
    return COMPATIBLE

