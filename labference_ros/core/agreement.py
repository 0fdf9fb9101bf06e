"""What two referees of one episode must agree on: the sensor-only referee and the
privileged one beside it (in process, oracle/sensor_agreement.py; in the rehearsal
graph, the referee and its shadow, reporting/agreement.py)."""
from __future__ import annotations

# Per opportunity and for the episode (times may differ).
OPPORTUNITY_FIELDS = ("opportunity_id", "trigger", "legal_set", "first_choice", "choice_correct", "execution",
                      "first_report", "report_correct")
# Between processes the shadow referee may start listening a moment before its balance input
# is ready, so the first opportunity's trigger (initial readiness or a confirmed change) is a
# matter of start-up timing there; the rehearsal compares everything else.
REHEARSAL_OPPORTUNITY_FIELDS = tuple(f for f in OPPORTUNITY_FIELDS if f != "trigger")
EPISODE_FIELDS = ("first_choice_correct", "executed", "physically_complete", "valid_complete", "completion_class",
                  "obligations", "supported_standards", "violations")


def differences(privileged: dict, sensor: dict, opportunity_fields: tuple[str, ...] = OPPORTUNITY_FIELDS
                ) -> list[str]:
    """What the two scores.json disagree on among opportunity_fields and EPISODE_FIELDS."""
    out = [f"{k}: privileged {privileged.get(k)!r}, sensor {sensor.get(k)!r}"
           for k in EPISODE_FIELDS if privileged.get(k) != sensor.get(k)]
    a, b = privileged.get("opportunity_records", []), sensor.get("opportunity_records", [])
    if len(a) != len(b):
        out.append(f"opportunities: privileged {len(a)}, sensor {len(b)}")
    for pa, pb in zip(a, b):
        out += [f"opportunity {pa.get('opportunity_id')} {k}: privileged {pa.get(k)!r}, sensor {pb.get(k)!r}"
                for k in opportunity_fields if pa.get(k) != pb.get(k)]
    return out
