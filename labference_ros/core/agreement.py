"""What two referees of one episode must agree on: the sensor-only referee and the
privileged one beside it (in process, oracle/sensor_agreement.py; in the rehearsal
graph, the referee and its shadow, reporting/agreement.py).

Everything that scores is compared: every opportunity's fields below, the episode's
fields, the count of every category (scores.json `categories`), and the validity and
safety events (events.jsonl): a validity event seen by one referee only is a
difference, as is the same event for another reason.

Two kinds of validity event are not compared, and are said apart instead:
- the sensing path's own uncertainty (reasons starting with SENSING_UNCERTAINTY: the
  sensor estimator could not tell where a standard stands, e.g. its marker hidden by
  the arm, and invalidated the reading rather than guess). The privileged referee
  reads the simulator and has no such state; what the uncertainty hid shows in the
  compared fields if it changed a score.
- in the rehearsal, a validity event at the referee's own episode start (the shadow
  can start listening before its balance input is ready: `no_reading` at its first
  measurement), for the reason the first trigger is left out."""
from __future__ import annotations

from collections import Counter
from typing import Iterable

# Per opportunity and for the episode (times may differ).
OPPORTUNITY_FIELDS = ("opportunity_id", "trigger", "legal_set", "first_choice", "choice_correct", "execution",
                      "first_report", "report_correct")
# Between processes the shadow referee may start listening a moment before its balance input
# is ready, so the first opportunity's trigger (initial readiness or a confirmed change) is a
# matter of start-up timing there; the rehearsal compares everything else.
REHEARSAL_OPPORTUNITY_FIELDS = tuple(f for f in OPPORTUNITY_FIELDS if f != "trigger")
EPISODE_FIELDS = ("first_choice_correct", "executed", "physically_complete", "valid_complete", "completion_class",
                  "obligations", "supported_standards", "violations")
# Event categories that decide whether an episode's readings and its completion are valid:
# compared one by one, with their reasons (docs/records.md).
VALIDITY_AND_SAFETY_EVENTS = ("validity", "safety_violation", "protocol_violation")
# Invalid reasons a sensor estimator gives for its own uncertainty (tasks/weighing/sensor_estimator.py
# ESTIMATOR; test/reporting/test_agreement.py keeps the two in step).
SENSING_UNCERTAINTY = ("estimator:",)


def differences(privileged: dict, sensor: dict, opportunity_fields: tuple[str, ...] = OPPORTUNITY_FIELDS
                ) -> list[str]:
    """What the two scores.json disagree on among opportunity_fields, EPISODE_FIELDS and the
    per-category counts."""
    out = [f"{k}: privileged {privileged.get(k)!r}, sensor {sensor.get(k)!r}"
           for k in EPISODE_FIELDS if privileged.get(k) != sensor.get(k)]
    out += _category_differences(privileged.get("categories") or {}, sensor.get("categories") or {})
    a, b = privileged.get("opportunity_records", []), sensor.get("opportunity_records", [])
    if len(a) != len(b):
        out.append(f"opportunities: privileged {len(a)}, sensor {len(b)}")
    for pa, pb in zip(a, b):
        out += [f"opportunity {pa.get('opportunity_id')} {k}: privileged {pa.get(k)!r}, sensor {pb.get(k)!r}"
                for k in opportunity_fields if pa.get(k) != pb.get(k)]
    return out


def _category_differences(privileged: dict, sensor: dict) -> list[str]:
    return [f"category {k}: privileged {privileged.get(k, 0)}, sensor {sensor.get(k, 0)}"
            for k in sorted(set(privileged) | set(sensor)) if privileged.get(k, 0) != sensor.get(k, 0)]


def event_key(event: dict) -> tuple[str, str]:
    """(category, reason) of a validity or safety event; its time may differ between referees."""
    detail = event.get("detail") or {}
    return event.get("category", ""), str(detail.get("reason", ""))


def _events(records: Iterable[dict]) -> list[dict]:
    return [r for r in records if r.get("record", "event") == "event"]


def _uncertain(event: dict) -> bool:
    return event.get("category") == "validity" and event_key(event)[1].startswith(SENSING_UNCERTAINTY)


def validity_and_safety(events: Iterable[dict], skip_start: bool = False) -> Counter:
    """How often each (category, reason) of VALIDITY_AND_SAFETY_EVENTS occurs among the records,
    without the sensing path's own uncertainty; skip_start: nor the validity events at the
    referee's episode start."""
    events = _events(events)
    start = next((e.get("t") for e in events if e.get("category") == "episode_start"), None)
    return Counter(event_key(e) for e in events
                   if e.get("category") in VALIDITY_AND_SAFETY_EVENTS and not _uncertain(e)
                   and not (skip_start and e.get("category") == "validity" and e.get("t") == start))


def event_differences(privileged_events: Iterable[dict], sensor_events: Iterable[dict], skip_start: bool = False
                      ) -> list[str]:
    """The validity and safety events one referee recorded and the other did not (by category
    and reason, counted: the same onset twice on one side and once on the other differs)."""
    a, b = validity_and_safety(privileged_events, skip_start), validity_and_safety(sensor_events, skip_start)
    return [f"{category} event {reason!r}: privileged {a.get((category, reason), 0)}, "
            f"sensor {b.get((category, reason), 0)}"
            for category, reason in sorted(set(a) | set(b)) if a.get((category, reason), 0) != b.get((category, reason), 0)]


def uncertainty_notes(sensor_events: Iterable[dict]) -> list[str]:
    """The sensing path's own uncertainty, counted by reason: said, not compared."""
    counts = Counter(event_key(e)[1] for e in _events(sensor_events) if _uncertain(e))
    return [f"sensor-only uncertainty, {n} validity event{'s' if n > 1 else ''}: {reason}"
            for reason, n in sorted(counts.items())]
