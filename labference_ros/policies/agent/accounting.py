"""Per-call and per-episode accounting (protocol: unknown usage is unknown,
never zero; cost is None as soon as any charged call lacks usage).

`EpisodeAccount.usage()` is the episode's `usage` record in run.json (schema
in docs/records.md); reporting/accounting.py reads its `cost_usd`,
`model_calls` and `overload_rejections`."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from labference_ros.core.records import known_sum


@dataclass(frozen=True)
class PriceTable:
    """USD per million tokens for the configured model (declared, not measured)."""
    input_per_mtok: float | None = None
    output_per_mtok: float | None = None
    source: str = ""

    @classmethod
    def from_params(cls, d: dict | None) -> "PriceTable":
        d = dict(d or {})
        for k in ("input_per_mtok", "output_per_mtok"):
            v = d.get(k)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
                raise ValueError(f"price table {k} must be a non-negative number, got {v!r}")
        return cls(d.get("input_per_mtok"), d.get("output_per_mtok"), str(d.get("source", "")))

    def cost(self, tokens_in: int | None, tokens_out: int | None) -> float | None:
        if None in (tokens_in, tokens_out, self.input_per_mtok, self.output_per_mtok):
            return None
        return (tokens_in * self.input_per_mtok + tokens_out * self.output_per_mtok) / 1e6


@dataclass
class CallRecord:
    round: int
    tokens_in: int | None
    tokens_out: int | None
    latency_s: float  # the last HTTP exchange of the call
    elapsed_s: float  # charged: model_computation_s + communication_s + retry_wait_s
    model_computation_s: float | None  # server-reported; None when not reported
    communication_s: float | None  # the rest of the charged time outside the retry wait
    overload_rejections: int
    retry_wait_s: float
    request_bytes: int
    cost_usd: float | None
    # "plan", "final", "malformed", "after_deadline", "failed" (no usable reply),
    # "in_flight_at_end" (still out when the runtime ended the episode; usage unknown)
    outcome: str

    def to_dict(self) -> dict:
        return dict(asdict(self), kind="model_call")


@dataclass
class ActionRecord:
    round: int
    tool: str
    arguments: dict
    ok: bool
    moved: bool
    physical: bool
    sim_s: float = 0.0  # simulated execution time
    wall_s: float = 0.0  # wall time while the motion was being executed
    injected_fault: bool = False  # evaluator-side record only, never sent to the agent
    error: str = ""

    def to_dict(self) -> dict:
        return dict(asdict(self), kind="action")


@dataclass
class EpisodeAccount:
    calls: list[CallRecord] = field(default_factory=list)
    actions: list[ActionRecord] = field(default_factory=list)

    def call_usage(self, call: CallRecord) -> dict:
        """One call as run.json keeps it: its own tokens and times, plus the
        physical execution of the actions its plan dispatched (its round)."""
        mine = [a for a in self.actions if a.round == call.round]
        return {**asdict(call), "actions": len(mine),
                "physical_execution_wall_s": sum(a.wall_s for a in mine),
                "physical_execution_sim_s": sum(a.sim_s for a in mine)}

    def usage(self, turn_elapsed_s: float | None = None) -> dict:
        calls = self.calls
        return {
            "model_calls": len(calls),
            "actions": len(self.actions),
            "physical_actions": sum(a.physical for a in self.actions),
            "overload_rejections": sum(c.overload_rejections for c in calls),
            "tokens_in": known_sum(c.tokens_in for c in calls),
            "tokens_out": known_sum(c.tokens_out for c in calls),
            "cost_usd": known_sum(c.cost_usd for c in calls),
            "model_wait_s": sum(c.elapsed_s for c in calls),
            "model_computation_s": known_sum(c.model_computation_s for c in calls),
            "communication_s": known_sum(c.communication_s for c in calls),
            "retry_wait_s": sum(c.retry_wait_s for c in calls),
            "physical_execution_wall_s": sum(a.wall_s for a in self.actions),
            "physical_execution_sim_s": sum(a.sim_s for a in self.actions),
            "turn_elapsed_s": turn_elapsed_s,
            "calls": [self.call_usage(c) for c in calls],
        }
