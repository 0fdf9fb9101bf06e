"""Referee corner cases (issue 16, deliverable 5), each on a synthetic stream."""
from referee_streams import episode


def _without_time(scores: dict) -> dict:
    return {k: v for k, v in scores.items() if k != "t"}


def test_nothing_after_episode_end_opens_an_opportunity_or_changes_a_score():
    ref, w = episode(observe_every_s=None)
    w.run(0.3)
    w.observe()
    w.move("std_10", "pan")  # a confirmed change: new evidence, not yet delivered
    final = ref.finish(w.t, "episode_end")[-1]
    opportunities = len(ref.opportunities)

    late_observation = ref.deliver_observation("obs-late", w.t + 0.1)
    late_report = ref.report_operation({"type": "stop"}, w.t + 0.2)
    late_intervention = ref.check_intervention(
        {"mode": "assist", "site": "state", "opportunity_id": opportunities,
         "evidence_version": ref.state()["evidence_version"], "payload": {"displayed_g": 140.0}}, w.t + 0.3)
    w.run(1.0)  # the world stream keeps flowing after the end

    assert len(ref.opportunities) == opportunities
    assert not [e for e in ref.events if e["category"] == "early_termination"]
    assert _without_time(ref.finish(w.t, "episode_end")[-1]) == _without_time(final)
    assert [r["record"] for r in late_observation] == ["receipt"]
    assert late_observation[0]["status"] == "late" and not late_observation[0]["opened"]
    assert late_observation[0]["opportunity_id"] == -1
    assert [r["record"] for r in late_report] == ["report"]
    assert late_report[0]["reason"] == "late" and late_report[0]["scored"] is False
    assert late_intervention[0]["status"] == "late" and late_intervention[0]["kind"] == "intervention"
    assert ref.late_inputs["observation"] == 1 and ref.late_inputs["report"] == 1
    assert ref.late_inputs["intervention"] == 1 and ref.late_inputs["measurement"] == 50
