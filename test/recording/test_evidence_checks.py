"""Evidence-version checks of the audit on plain records (no bag, no graph)."""
from __future__ import annotations

from types import SimpleNamespace

from labference_ros.msgconv import s_to_stamp
from labference_ros.recording.compare import compare_stream, field_diffs
from labference_ros.recording.evidence import EvidenceTimeline, check_actions, check_opportunities

RECORDS = [
    {"record": "legal_set", "t": 0.0, "opportunity_id": -1, "evidence_version": 1},
    {"record": "receipt", "kind": "observation", "payload_id": "obs-1", "t": 2.0, "evidence_version": 1,
     "opportunity_id": 1, "opened": True, "status": "delivered"},
    {"record": "opportunity", "t": 2.0, "opportunity_id": 1, "evidence_version": 1},
    {"record": "legal_set", "t": 2.0, "opportunity_id": 1, "evidence_version": 1},
    {"record": "legal_set", "t": 9.0, "opportunity_id": -1, "evidence_version": 2},
]


def chunk(cid, obs, ev, t):
    c = SimpleNamespace(episode_id="ep", chunk_id=cid, observation_id=obs, evidence_version=ev,
                        header=SimpleNamespace(stamp=SimpleNamespace(sec=0, nanosec=0)))
    s_to_stamp(t, c.header.stamp)
    return c


def receipt(payload, status):
    return SimpleNamespace(payload_id=payload, status=status)


def test_timeline_gives_the_version_current_at_a_time():
    tl = EvidenceTimeline(RECORDS)
    assert (tl.at(1.0), tl.at(9.0), tl.at(20.0)) == (1, 2, 2) and tl.next_change_after(2.0) == 9.0


def test_a_chunk_bound_to_its_delivery_passes():
    assert check_actions("ep", RECORDS, [chunk("c1", "obs-1", 1, 2.0)], [], []) == []


def test_chunk_with_another_evidence_version_than_its_delivery_is_reported():
    f = check_actions("ep", RECORDS, [chunk("c1", "obs-1", 2, 2.0)], [], [])
    assert [(x.record, x.field, x.online, x.audit) for x in f] == [("chunk c1", "evidence_version", 2, 1)]


def test_chunk_from_an_undelivered_observation_is_reported():
    f = check_actions("ep", RECORDS, [chunk("c1", "obs-9", 1, 2.0)], [], [])
    assert f and f[0].field == "observation_id"


def test_a_chunk_answering_an_observation_delivered_after_the_end_is_not_checked():
    # The bridge can observe and answer between the referee's completion and the
    # runner's finish; the referee records that delivery as late, so no receipt.
    after_end = chunk("c2", "obs-2", 2, 12.0)
    late = {"obs-2": 11.5}
    assert [x.field for x in check_actions("ep", RECORDS, [after_end], [], [])] == ["observation_id"]
    assert check_actions("ep", RECORDS, [after_end], [], [], delivered_late=late) == []
    # Only those: a chunk from another undelivered observation is still reported,
    other = chunk("c3", "obs-3", 2, 12.0)
    assert len(check_actions("ep", RECORDS, [after_end, other], [], [], delivered_late=late)) == 1
    # as is one stamped before its observation arrived,
    early = chunk("c4", "obs-2", 2, 11.0)
    assert [x.field for x in check_actions("ep", RECORDS, [early], [], [], delivered_late=late)] == ["observation_id"]
    # and a chunk of an observation delivered on time, even if the same id came again late.
    wrong_version = chunk("c5", "obs-1", 2, 2.0)
    assert [x.field for x in check_actions("ep", RECORDS, [wrong_version], [], [],
                                           delivered_late={"obs-1": 12.0})] == ["evidence_version"]


def test_stale_chunk_must_be_invalidated():
    stale = chunk("c1", "obs-1", 1, 9.5)  # version 2 was current at 9.0
    assert [x.note for x in check_actions("ep", RECORDS, [stale], [], [])] == [
        "stale chunk (older than the latest handoff) was not invalidated"]
    assert check_actions("ep", RECORDS, [stale], [receipt("c1", "invalidated")], []) == []


def test_opportunity_whose_opening_receipt_has_another_version_is_reported():
    bad = [dict(r, evidence_version=3) if r["record"] == "receipt" else r for r in RECORDS]
    f = check_opportunities(bad)
    assert len(f) == 1 and f[0].record == "opportunity 1"


def test_compare_names_the_record_and_nested_field():
    online = [{"record": "event", "event_id": "ep:e000002", "category": "choice", "detail": {"correct": True}}]
    audit = [{"record": "event", "event_id": "ep:e000002", "category": "choice", "detail": {"correct": False}}]
    f = compare_stream("events.jsonl", online, audit)
    assert [(x.where, x.record, x.field) for x in f] == [("events.jsonl line 1", "event ep:e000002 (choice)",
                                                          "detail.correct")]
    assert compare_stream("events.jsonl", online, online) == []
    # A missing record is named too, and bools never equal numbers.
    assert compare_stream("events.jsonl", online, [])[0].audit == "<missing>"
    assert field_diffs({"x": True}, {"x": 1}) == [("x", True, 1)]
