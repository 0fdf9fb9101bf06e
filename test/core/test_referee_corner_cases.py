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


def _drop_and_regrasp(where: str):
    """Choose std_50 (correct), let it go over `where`, regrasp it before the
    confirmation dwell ends, then place it on the pan."""
    ref, w = episode()
    w.run(0.3)
    w.grasp("std_50")
    w.run(0.2)
    w.put("std_50", where, settle_s=0.15)  # released; dwell_s (0.5 s) not reached
    assert not w.events("support_change")
    w.grasp("std_50")
    w.run(0.2)
    w.put("std_50", "pan")
    w.run(4.0)
    return ref, w


def test_a_drop_onto_the_table_is_an_execution_failure_even_when_regrasped_in_time():
    ref, w = _drop_and_regrasp("table")
    failures = w.events("execution_failure")
    assert len(failures) == 1 and failures[0]["detail"]["drop"] is True
    assert failures[0]["detail"]["location"] == "table"
    s = ref.scores()
    assert s["first_choice_correct"] is True and s["executed"] is False
    assert ref.opportunities[0].execution == "failed"
    # The regrasp still places the weight: its own attempt is confirmed, the task completes, recovered.
    assert s["execution"] == {"confirmed": 1, "failed": 1, "rate": 0.5}
    assert s["physically_complete"] and s["completion_class"] == "recovered"


def test_a_fall_caught_by_a_regrasp_is_an_execution_failure():
    ref, w = _drop_and_regrasp("floor")  # nothing under it: it falls
    failures = w.events("execution_failure")
    assert len(failures) == 1 and failures[0]["detail"]["location"] == "elsewhere"
    assert ref.scores()["executed"] is False


def test_releasing_onto_the_destination_and_adjusting_is_no_drop():
    ref, w = _drop_and_regrasp("pan")
    assert not w.events("execution_failure")
    assert ref.scores()["executed"] is True
