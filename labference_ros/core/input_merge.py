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
from dataclasses import dataclass, field

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
    def __init__(self, readings: bool = True):
        # readings: the measurements pair with balance readings (a family without a
        # balance releases each world state as it comes).
        self._paired = readings
        self._worlds: dict[int, WorldMeasurement] = {}
        self._readings: dict[int, BalanceMeasurement] = {}
        self._reading_keys: list[int] = []  # the keys of _readings, sorted
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
            if k not in self._readings:
                bisect.insort(self._reading_keys, k)
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
            if not final and self._paired and k > self._latest_reading:
                break
            self._release_deliveries(out, before=k)
            m = self._worlds.pop(k)
            out.append(("measure", m.with_balance(self._readings.pop(k, None))))
            self._released = k
            self._drop_readings_through(k)
        self._release_deliveries(out, before=None if final else self._released + 1)
        return out

    def _drop_readings_through(self, k: int) -> None:
        """Readings at or before a released world state can no longer pair."""
        stale = bisect.bisect_right(self._reading_keys, k)
        for old in self._reading_keys[:stale]:
            self._readings.pop(old, None)
        del self._reading_keys[:stale]

    def _release_deliveries(self, out, before: int | None) -> None:
        while self._deliveries and (before is None or self._deliveries[0][0] < before):
            out.append(("deliver", self._deliveries.pop(0)[2]))


# -- feeding a referee: one path for the online node and the replay audit -------------
LATE = "late"


def is_late(record: dict) -> bool:
    """A receipt or report the referee gave an input received after episode_end.

    Such records are returned (the node publishes a late intervention's receipt so
    the bridge settles it) and counted (``Referee.late_inputs``), but neither the
    node nor the replay audit writes them to observations.jsonl: which inputs
    arrive after the end depends on when each side stopped listening (the node at
    its finish service, the bag when the recorder stopped), so writing them would
    make the two copies differ (docs/records.md, "Referee corner cases")."""
    if record.get("record") == "receipt":
        return record.get("status") == LATE
    return record.get("record") == "report" and record.get("reason") == LATE


def cutoff(last_t: float, items, t_end: float) -> float | None:
    """The sim time after which a delivery is late, the same rule for the online
    node and the replay audit: max(last measurement handled, t_end), where the last
    measurement handled counts the measurements among ``items`` (InputMerger.drain)
    still to be fed. ``t_end`` is the runner's finish (sim time); t_end <= 0 (the
    runner did not know the sim time) means no cutoff: every delivery received
    before the finish is given before it."""
    if t_end <= 0.0:
        return None
    handled = [item.t for kind, item in items if kind == "measure"]
    return max([last_t, t_end, *handled])


LATE_REPORT_ANSWER = (False, LATE)  # (accepted, message) of a report after episode_end


def report_answer(report: dict) -> tuple[bool, str]:
    """The node's answer (accepted, message) to an operation report, from the
    referee's report record. A late report gets LATE_REPORT_ANSWER whether the
    referee had ended itself or the node's finish service had already returned."""
    return bool(report.get("accepted")), str(report.get("reason") or "")


def feed(referee, items, last_t: float, cutoff: float | None = None,
         held: list | None = None) -> tuple[list[dict], float]:
    """Give merged inputs (InputMerger.drain) to the referee in order; returns its
    records and the last measurement time. With ``cutoff`` (input_merge.cutoff), a
    delivery stamped after it is not given now but appended to ``held``: it is
    after the episode's end and is given after ``finish`` (late)."""
    out: list[dict] = []
    for kind, item in items:
        if kind == "measure":
            last_t = item.t
            out += referee.step(item)
        elif cutoff is not None and held is not None and item.t > cutoff + 1e-9:
            held.append(item)
        else:
            out += deliver(referee, item)
    return out, last_t


def deliver(referee, item: Delivery) -> list[dict]:
    if item.intervention is not None:  # an Oracle support the bridge handed over
        return referee.check_intervention(item.intervention, item.t)
    return referee.deliver_observation(item.observation_id, item.t, item.session_id)


def finish(referee, merger: InputMerger, last_t: float, t_end: float, reason: str,
           held: list | None = None) -> tuple[list[dict], list[dict]]:
    """Release every buffered input, end the episode at max(last measurement, t_end),
    then give the deliveries stamped after the cutoff (input_merge.cutoff), and any
    already ``held`` by the caller, which the referee records as late.
    Returns (records up to and including the final scores, late records)."""
    held = list(held or [])
    items = merger.drain(final=True)
    out, last_t = feed(referee, items, last_t, cutoff=cutoff(last_t, items, t_end), held=held)
    out += referee.finish(max(last_t, t_end), reason)
    late: list[dict] = []
    for item in held:
        late += deliver(referee, item)
    return out, late
