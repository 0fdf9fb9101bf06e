"""Orders the referee's inputs by sim time, independent of arrival order.

World states and balance readings travel on separate topics; each world state
at t is paired with the balance reading stamped t, and an observation
delivered at t is released after the measurement at t. The online referee node
and the replay audit feed messages through this same merger, so the Referee
sees the same input sequence whatever order DDS (or a bag) delivered them in.
Deliveries are ordered exactly as long as each arrives before any world state
later than it; in sync mode the policy bridge guarantees this by waiting for
the referee's receipt before it lets physics advance.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field, replace

from .measurements import BalanceMeasurement, WorldMeasurement

STAMP_NS = 1_000_000_000


def key(t: float) -> int:
    """Sim time as integer nanoseconds: exact pairing despite float round trips."""
    return int(round(t * STAMP_NS))


@dataclass(frozen=True)
class Delivery:
    """Something that reached the policy boundary at sim time t: an observation,
    or (``intervention`` set) an Oracle support the bridge handed to the system
    at that handoff. Both are ordered after the measurement at t."""
    observation_id: str
    t: float
    session_id: str = ""
    intervention: dict | None = field(default=None, compare=False)


class InputMerger:
    def __init__(self):
        self._worlds: dict[int, WorldMeasurement] = {}
        self._readings: dict[int, BalanceMeasurement] = {}
        self._deliveries: list[tuple[int, int, Delivery]] = []  # (t, arrival, delivery)
        self._arrivals = 0
        self._latest_reading = -1
        self._released = -1  # key of the last released world state

    def add_world(self, m: WorldMeasurement) -> None:
        k = key(m.t)
        if k > self._released:
            self._worlds[k] = m

    def add_reading(self, t: float, reading: BalanceMeasurement) -> None:
        k = key(t)
        if k > self._released:
            self._readings[k] = reading
        self._latest_reading = max(self._latest_reading, k)

    def add_delivery(self, d: Delivery) -> None:
        self._arrivals += 1
        bisect.insort(self._deliveries, (key(d.t), self._arrivals, d))

    def drain(self, final: bool = False) -> list[tuple[str, object]]:
        """Inputs ready now, in order: ("measure", WorldMeasurement) / ("deliver", Delivery).

        A world state waits for its reading until a reading at or after its stamp
        exists (a missing reading then leaves balance=None: an invalid window);
        ``final`` releases everything.
        """
        out: list[tuple[str, object]] = []
        for k in sorted(self._worlds):
            if not final and k > self._latest_reading:
                break
            self._release_deliveries(out, before=k)
            m = self._worlds.pop(k)
            out.append(("measure", replace(m, balance=self._readings.pop(k, None))))
            self._released = k
            for old in [r for r in self._readings if r <= k]:
                del self._readings[old]
        self._release_deliveries(out, before=None if final else self._released + 1)
        return out

    def _release_deliveries(self, out, before: int | None) -> None:
        while self._deliveries and (before is None or self._deliveries[0][0] < before):
            out.append(("deliver", self._deliveries.pop(0)[2]))
