"""External events at hidden times (SciHorizon-eLab 4 and 5.2.2: human-agent coordination).

A condition may declare one event the environment causes on its own (a second
operator's signal: a ready lamp that lights, a lid that opens), visible only
through the sensors. Its time is drawn with the instance's task seed from the
declared window and recorded in the instance; the simulator runs it as an
environment transition (the mechanism of placement recall's rack turn: the
first world state after it carries its record). Until it happens the legal set
is Wait and any robot contact with an affected object is a premature
interaction; after it, the family's normal protocol.

Measured apart from completion (paper eqs. 8-9), over the episodes that reached
the event: premature interactions before it (count, and whether any), the
response latency (sim time from the event to the first identified choice), and
completion. Pure: the draw is seeded, nothing reads a clock.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

from labference_ros.core.proportions import interval

# The environment acts at camera ticks (lab_sim's 10 Hz default), so a trigger
# time is drawn on that grid: the event happens at its scheduled time exactly.
TRIGGER_GRID_S = 0.1
# Event category of one premature interaction (an error, core.scoring.ERROR_CATEGORIES).
PREMATURE_INTERACTION = "premature_interaction"
# Key of the environment record (WorldMeasurement.environment) that announces the event.
ENVIRONMENT_KEY = "external_event"
# Trigger of the evidence the event opens (the legal set's record names it).
EVIDENCE_TRIGGER = "external_event"


@dataclass(frozen=True)
class ExternalEventSpec:
    """What a condition declares (part of its contract, hence of its hash)."""

    name: str  # e.g. "ready_lamp"
    window_s: tuple[float, float]  # sim seconds from the episode's start: the trigger's range
    affected: tuple[str, ...]  # objects (and fixtures) the robot must not touch before the event
    cue: str  # what the sensors show when it happens

    def __post_init__(self) -> None:
        lo, hi = self.window_s
        if not (0.0 < lo <= hi) or math.floor(hi / TRIGGER_GRID_S + 1e-9) < math.ceil(lo / TRIGGER_GRID_S - 1e-9):
            raise ValueError(f"external event {self.name!r}: window {self.window_s} holds no "
                             f"{TRIGGER_GRID_S} s tick after the start")


def draw_trigger_time(spec: ExternalEventSpec, task_seed: int) -> float:
    """The event's sim time for an instance: uniform over the window's grid ticks, from a
    stream of its own seeded by the task seed (the same seed gives the same time)."""
    lo, hi = spec.window_s
    first = math.ceil(lo / TRIGGER_GRID_S - 1e-9)
    last = math.floor(hi / TRIGGER_GRID_S + 1e-9)
    k = random.Random(f"external-event:{spec.name}:{task_seed}").randint(first, last)
    return round(k * TRIGGER_GRID_S, 6)


def instance_record(spec: ExternalEventSpec, task_seed: int) -> dict:
    """What the instance keeps of its event (evaluator data: never in a policy observation)."""
    return {"name": spec.name, "window_s": list(spec.window_s), "trigger_t": draw_trigger_time(spec, task_seed)}


class ExternalEventWatch:
    """One episode's event: whether it has happened, the premature interactions before
    it, and the first identified choice after it. The referee feeds it."""

    def __init__(self, spec: ExternalEventSpec, trigger_t: float):
        self.spec, self.trigger_t = spec, float(trigger_t)
        self.happened_t: float | None = None
        self.premature: list[dict] = []  # {"t", "object"}: each onset of contact before the event
        self._touching: frozenset = frozenset()
        self.response: dict | None = None  # the first identified choice after the event

    @property
    def pending(self) -> bool:
        return self.happened_t is None

    def happened(self, t: float) -> bool:
        """The environment announced the event at t; True the first time."""
        if self.happened_t is not None:
            return False
        self.happened_t = t
        return True

    def contacts(self, t: float, touched) -> list[str]:
        """The affected objects the robot touches at t: those whose contact starts now
        while the event is pending (each a premature interaction), in name order."""
        now = frozenset(o for o in touched if o in self.spec.affected)
        onsets = sorted(now - self._touching) if self.pending else []
        self._touching = now
        for obj in onsets:
            self.premature.append({"t": t, "object": obj})
        return onsets

    def choice(self, t: float, operation: dict | None, correct: bool | None, opportunity_id: int) -> None:
        """An identified choice at t: the first one at or after the event is the response."""
        if self.happened_t is None or self.response is not None or t < self.happened_t - 1e-9:
            return
        self.response = {"t": t, "latency_s": round(t - self.happened_t, 6), "operation": operation,
                         "correct": correct, "opportunity_id": opportunity_id}

    def scores(self, completed: bool) -> dict:
        """scores.json's `external_event`."""
        return {"name": self.spec.name, "window_s": list(self.spec.window_s), "trigger_t": self.trigger_t,
                "t": self.happened_t, "reached": self.happened_t is not None,
                "premature_interactions": len(self.premature), "premature": bool(self.premature),
                "premature_contacts": list(self.premature), "response": self.response,
                "response_latency_s": self.response["latency_s"] if self.response else None,
                "completed": bool(completed)}


def population_metrics(records: list[dict]) -> dict:
    """The paper's coordination metrics over episodes' scores.json `external_event`
    records: the population is the episodes that reached the event (eq. 8's N_eval).
    PVR = episodes with a premature interaction / N; latency averaged over the episodes
    with a response (eq. 9); completion / N. Episodes ended before the event are counted
    apart (not_reached)."""
    reached = [r for r in records if r.get("reached")]
    n = len(reached)
    premature = sum(1 for r in reached if r.get("premature"))
    completed = sum(1 for r in reached if r.get("completed"))
    latencies = sorted(r["response_latency_s"] for r in reached if r.get("response_latency_s") is not None)

    return {
        "episodes": len(records), "reached": n, "not_reached": len(records) - n,
        "premature_violation": interval(premature, n),
        "premature_interactions": sum(int(r.get("premature_interactions", 0)) for r in reached),
        "premature_interactions_per_episode": (sum(int(r.get("premature_interactions", 0)) for r in reached) / n
                                               if n else None),
        "response": {"n": len(latencies), "mean_latency_s": sum(latencies) / len(latencies) if latencies else None,
                     "median_latency_s": _median(latencies), "min_latency_s": latencies[0] if latencies else None,
                     "max_latency_s": latencies[-1] if latencies else None},
        "completion": interval(completed, n),
    }


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
