"""Referee corner cases (issue 16, deliverable 5), each on a synthetic stream."""
from referee_streams import episode, instance


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
    # Echoed under the requested opportunity, so the bridge's handoff settles instead of waiting.
    assert late_intervention[0]["opportunity_id"] == opportunities
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
    # Contrast: released onto the destination and picked up again is an adjustment, no drop.
    adjusted, wa = _drop_and_regrasp("pan")
    assert not wa.events("execution_failure") and adjusted.scores()["executed"] is True
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
    # Contrast: released in mid-air and regrasped while still falling, before it
    # came to rest anywhere, is no drop (it neither rested on a support nor fell).
    caught, wc = episode()
    wc.run(0.3)
    wc.grasp("std_50")
    wc.release("std_50")  # fingers open in the air: nothing under it
    wc.moving["std_50"] = wc.t + 1.0  # falling
    wc.run(0.2)  # longer than the release hold: a release is recognised
    assert wc.events("release") and not wc.events("execution_failure")
    wc.grasp("std_50")  # caught
    wc.put("std_50", "pan")
    wc.run(4.0)
    assert not wc.events("execution_failure") and caught.scores()["executed"] is True

    ref, w = _drop_and_regrasp("floor")  # nothing under it: it falls and lies still
    failures = w.events("execution_failure")
    assert len(failures) == 1 and failures[0]["detail"]["location"] == "elsewhere"
    assert failures[0]["detail"]["support"] == "none"
    assert ref.scores()["executed"] is False


def test_an_ambiguous_reseat_on_the_destination_is_no_drop():
    # Left leaning on the pan's rim (pan and balance body: ambiguous support) and
    # picked up again: it rested on the destination, partly, so it is an adjustment.
    reseat, wr = _drop_and_regrasp("rim")
    assert not wr.events("execution_failure") and reseat.scores()["executed"] is True
    # Left on the table and the balance body (ambiguous, not touching the pan): a drop.
    ref, w = episode()
    w.run(0.3)
    w.grasp("std_50")
    w.run(0.2)
    w.put("std_50", "table_edge", settle_s=0.15)
    w.grasp("std_50")
    w.run(0.2)
    w.put("std_50", "pan")
    w.run(4.0)
    failures = w.events("execution_failure")
    assert len(failures) == 1 and failures[0]["detail"]["support"] == "ambiguous"
    assert ref.scores()["executed"] is False


def _holding_when_the_next_opportunity_opens():
    """Extended task: std_100 goes onto the pan and, before it is confirmed, the
    robot already grasps std_20; std_100's confirmation opens the next
    opportunity while std_20 is in the hand."""
    inst = instance(220, 100, ("std_20", "std_100"), start=("std_50",), condition="extended")
    ref, w = episode(inst)
    w.run(0.3)
    w.move("std_100", "pan", settle_s=0.2)
    w.grasp("std_20", hold_s=1.5)
    held_opportunity = ref.opportunities[-1]
    assert held_opportunity.id == 2 and held_opportunity.trigger == "confirmed_change"
    assert held_opportunity.first_choice is None and ref.trackers["std_20"].grasping
    return ref, w, held_opportunity


def test_an_opportunity_opening_while_an_object_is_held_is_scored_from_where_it_goes():
    # Contrast: a held object put back where it was shows no choice; the next grasp is the choice.
    ref, w, held_opportunity = _holding_when_the_next_opportunity_opens()
    w.put("std_20", "table", settle_s=0.3)  # a quick correction: returned, no operation
    assert held_opportunity.first_choice is None
    w.grasp("std_50")
    assert str(held_opportunity.first_choice) == "remove(std_50->table)"

    ref, w, held_opportunity = _holding_when_the_next_opportunity_opens()
    w.put("std_20", "pan")
    assert str(held_opportunity.first_choice) == "add(std_20->pan)"
    assert held_opportunity.choice_correct is True
    choice = [e for e in w.events("choice") if e["opportunity_id"] == held_opportunity.id]
    assert choice[0]["detail"]["recognised_from"] == "held_object_touchdown"
    assert len(choice) == 1  # credited once
    assert held_opportunity.execution == "confirmed"
    assert ref.scores()["native"]["C_id"] == 1.0


def test_placing_a_weight_is_not_hand_pressure_but_contact_on_a_settled_reading_is():
    ref, w = episode()
    w.run(0.3)
    w.move("std_50", "pan")  # fingers on the load until release, reading still settling
    assert not w.events("hand_pressure")
    # Holding a weight on the pan until the reading settles: that contact spoils an eligible reading.
    ref2, w2 = episode()
    w2.run(0.3)
    w2.grasp("std_50")
    w2.put("std_50", "pan", release=False, settle_s=2.0)
    pressure = w2.events("hand_pressure")
    assert len(pressure) == 1 and pressure[0]["t"] > w2.events("grasp")[0]["t"] + 1.0
    # Pressing the pan itself on a settled reading is hand pressure too.
    ref3, w3 = episode()
    w3.run(0.3)
    w3.press_pan(0.5)
    assert len(w3.events("hand_pressure")) == 1


def test_contact_flicker_on_a_settled_reading_is_one_hand_pressure_onset():
    ref, w = episode()
    w.run(0.3)
    for _ in range(4):  # contact lost for 0.04 s at a time: shorter than the release hold
        w.press_pan(0.2)
        w.run(0.04)
    assert len(w.events("hand_pressure")) == 1
    w.run(ref.contract.recognisers.release_hold_s + 0.2)  # contact ended for longer than the hold
    w.press_pan(0.2)
    assert len(w.events("hand_pressure")) == 2
    # The stable flag flickering under one continuous contact is one onset too.
    ref2, w2 = episode()
    w2.run(0.3)
    w2.press_pan(0.3)
    w2.hand_on_pan = True
    w2.bump()  # the reading loses stability, then settles again, the hand still on the pan
    w2.run(1.5)
    w2.hand_on_pan = False
    w2.run(0.3)
    assert len(w2.events("hand_pressure")) == 1


def test_a_held_objects_choice_needs_a_touchdown_on_a_task_location_away_from_where_it_was_held():
    ref, w, held_opportunity = _holding_when_the_next_opportunity_opens()
    p0 = w.position["std_20"]
    # Set down on the balance body beside the pan (ambiguous: not a task location): no choice yet.
    w.put("std_20", "table_edge", release=False, settle_s=0.2)
    assert held_opportunity.first_choice is None
    # Lifted again and touched down on the pan 0.02 m from where it was held (under
    # the 0.05 m threshold, referee.HELD_CHOICE_MIN_DISPLACEMENT_M): no choice.
    w._set_place("std_20", "held")
    w.run(0.2)
    w.place["std_20"] = "pan"
    w.position["std_20"] = (p0[0], p0[1], p0[2] - 0.02)
    w.run(0.2)
    assert held_opportunity.first_choice is None
    # Lifted and carried onto the pan: the choice, at the touchdown, once.
    w._set_place("std_20", "held")
    w.run(0.2)
    w.put("std_20", "pan")
    assert str(held_opportunity.first_choice) == "add(std_20->pan)"
    choices = [e for e in w.events("choice") if e["opportunity_id"] == held_opportunity.id]
    assert len(choices) == 1 and choices[0]["t"] > w.events("grasp")[-1]["t"] + 0.6


def test_a_late_report_gets_one_answer_whoever_ended_the_episode():
    from labference_ros.core.input_merge import LATE_REPORT_ANSWER, is_late, report_answer

    # The referee ended itself at completion while the node still scores the episode:
    # the node answers from the referee's report record (input_merge.report_answer).
    ref, w = episode(observe_every_s=None)
    w.run(0.3)
    w.move("std_50", "pan")
    w.run(4.0)
    assert ref.finished == "completed"
    record = ref.report_operation({"type": "stop"}, w.t)[0]
    assert is_late(record) and record["accepted"] is False and record["scored"] is False
    # The same answer the node gives once its finish service has returned.
    assert report_answer(record) == LATE_REPORT_ANSWER == (False, "late")
    assert ref.late_inputs["report"] == 1
