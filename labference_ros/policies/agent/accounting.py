"""Per-call and per-episode accounting (protocol: unknown usage is unknown,
never zero; cost is None as soon as any charged call lacks usage)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


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
    latency_s: float
    elapsed_s: float  # charged, including any overload wait and post-deadline finish
    model_s: float | None  # server-reported computation; None when not reported
    communication_s: float | None  # latency minus model_s
    overload_rejections: int
    retry_wait_s: float
    request_bytes: int
    cost_usd: float | None
    outcome: str  # "plan", "final", "malformed", "after_deadline"

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

    def summary(self) -> dict:
        charged = [c for c in self.calls]
        costs = [c.cost_usd for c in charged]
        tin = [c.tokens_in for c in charged]
        tout = [c.tokens_out for c in charged]
        model = [c.model_s for c in charged]
        return {
            "model_calls": len(self.calls),
            "actions": len(self.actions),
            "physical_actions": sum(a.physical for a in self.actions),
            "overload_rejections": sum(c.overload_rejections for c in charged),
            "tokens_in": None if None in tin else sum(tin),
            "tokens_out": None if None in tout else sum(tout),
            "cost_usd": None if None in costs else sum(costs),
            "model_wait_s": sum(c.elapsed_s for c in charged),
            "model_computation_s": None if None in model else sum(model),
            "communication_s": (None if None in model
                                else sum(c.elapsed_s - c.model_s for c in charged)),
            "physical_execution_wall_s": sum(a.wall_s for a in self.actions),
            "physical_execution_sim_s": sum(a.sim_s for a in self.actions),
        }


def per_success(episodes: list[dict]) -> dict:
    """Protocol primary metrics over all attempts (PASS, FAIL and ERROR stay
    in the denominator): total cost and total task time divided by the
    number of successes. Unknown cost anywhere keeps the cost unknown; zero
    successes leave both undefined (None)."""
    n = len(episodes)
    successes = sum(e.get("verdict") == "PASS" for e in episodes)
    costs = [e.get("cost_usd") for e in episodes]
    times = [e.get("turn_elapsed_s") for e in episodes]
    cost = None if (not successes or None in costs) else sum(costs) / successes
    time_ = None if (not successes or None in times) else sum(times) / successes
    return {"attempts": n, "successes": successes,
            "completion_rate": successes / n if n else None,
            "cost_per_success_usd": cost, "time_per_success_s": time_,
            "unknown_cost_attempts": sum(c is None for c in costs),
            "model_calls": sum(e.get("model_calls", 0) for e in episodes),
            "overload_rejections": sum(e.get("overload_rejections", 0) for e in episodes)}
