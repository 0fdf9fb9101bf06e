"""The recorder's tally of what it wrote: per periodic topic, the instants its
period puts between the first and last stamp, against the stamps written."""
from __future__ import annotations

import json

from labference_ros.recording.completeness import Completeness, describe_gaps, gaps, periodic
from labference_ros.recording.demo_steps import _gap_notes

MS = 1_000_000


def test_stamps_missing_from_a_periodic_stream_are_its_gaps():
    c = Completeness()
    for k in range(50):  # the previous episode's tail, before the reset rewinds sim time
        c.note("/joint_states", (900 + 10 * k) * MS)
    for k in range(100):
        if k not in (7, 40, 41):
            c.note("/joint_states", 10 * k * MS)
    for k in range(30):
        c.note("/evaluator/world_state", 10 * k * MS)
        c.note("/evaluator/world_state", 10 * k * MS)  # a repeat is one instant
    for k in range(10):  # 15 Hz frames on a 10 ms grid: steps of 60 and 70 ms
        c.note("/cameras/front/image_raw", round(k * 1000 / 15 / 10) * 10 * MS)
    report = c.report()
    assert report["/joint_states"] == {"expected": 100, "recorded": 97, "missing": 3, "period_s": 0.01}
    assert report["/evaluator/world_state"]["missing"] == 0 and report["/evaluator/world_state"]["recorded"] == 30
    assert report["/cameras/front/image_raw"]["missing"] == 0
    found = gaps({"completeness": json.dumps(report)})
    assert list(found) == ["/joint_states"]
    assert describe_gaps(found) == "/joint_states 3 of 100 missing"
    # An export marks the episode with the same words.
    assert _gap_notes({"completeness": json.dumps(report)}) == [
        "recorder gaps (messages the recorder did not write): /joint_states 3 of 100 missing"]


def test_which_topics_are_tallied():
    assert periodic("/evaluator/world_state") and periodic("/cameras/wrist/image_raw")
    assert periodic("/cameras/front/camera_info") and not periodic("/referee/events") and not periodic("/tf")


def test_a_bag_without_a_tally_has_no_gaps_to_report():
    assert gaps({}) == {} and gaps({"completeness": "not json"}) == {} and _gap_notes({}) == []


def test_a_late_resend_fills_its_gap_and_keeps_the_gaps_counted_before_it():
    c = Completeness()
    for k in [0, 1, 2, 4, 5, 7, 8, 9]:  # instants 3 and 6 missing; 3 comes later, resent
        c.note("/joint_states", 10 * k * MS)
    c.note("/joint_states", 30 * MS)
    row = c.report()["/joint_states"]
    assert (row["expected"], row["recorded"], row["missing"]) == (10, 9, 1)
