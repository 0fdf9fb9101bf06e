"""Protocol tests of paper 8.5 plus the 4.2 failure cases, on synthetic streams."""
from referee_streams import episode, instance, ops

from labference_ros.core.metrics import p_state
from labference_ros.tasks.weighing.instances import pairs_of


def test_duplicate_queries_of_unchanged_evidence_keep_one_opportunity():
    ref, w = episode(observe_every_s=None)
    w.run(0.3)
    first = w.observe()[0]
    again = [w.observe()[0] for _ in range(3)]
    assert first["opened"] and first["opportunity_id"] == 1
    assert all(r["opportunity_id"] == 1 and not r["opened"] for r in again)
    assert len(ref.opportunities) == 1 and ref.opportunities[0].queries == 4
    assert len(w.records("opportunity")) == 1


def test_stale_evidence_is_never_scored():
    ref, w = episode(observe_every_s=None)
    w.run(0.3)
    early_t = w.t
    w.observe()
    w.move("std_50", "pan")  # confirmed change -> evidence version 2 (no delivery yet)
    assert ref.state()["evidence_version"] >= 2
    # An observation captured before the change arrives late: stale, opens nothing.
    stale = ref.deliver_observation("old", early_t)[0]
    assert stale["status"] == "stale" and stale["opportunity_id"] == -1
    n = len(ref.opportunities)
    # The policy acts on that stale evidence: its grasp is recorded but not scored.
    w.grasp("std_10")
    late = [e for e in w.events("choice") if e["object"] == "std_10"][0]
    assert late["detail"] == {"scored": False, "reason": "no_delivered_evidence"}
    assert len(ref.opportunities) == n
    # Fresh evidence then opens a new opportunity with a new id.
    fresh = w.observe()[0]
    assert fresh["opened"] and fresh["opportunity_id"] == n + 1


def test_shallow_placement_on_the_rim_is_not_counted():
    ref, w = episode()
    w.run(0.3)
    w.move("std_50", "rim", settle_s=3.0)
    st = ref.state()
    assert st["locations"]["std_50"] == "elsewhere" and st["obligations"]["std_50"]["status"] == "open"
    assert not w.events("obligation_confirmed") and w.events("execution_failure")
    assert ops(ref) == ["add(std_50->pan)"]
    w.run(4.0)
    assert not ref.scores()["physically_complete"]


def test_unreleased_placement_is_not_counted():
    ref, w = episode()
    w.run(0.3)
    w.grasp("std_50")
    w.put("std_50", "pan", release=False, settle_s=5.0)  # fingers stay on the weight
    assert ref.state()["locations"]["std_50"] == "table"
    assert not w.events("execution_confirmed") and not w.events("obligation_confirmed")
    assert not ref.scores()["physically_complete"]
    w.release("std_50")
    w.run(5.0)
    assert w.events("obligation_confirmed") and ref.scores()["physically_complete"]


def test_interrupted_stability_restarts_the_terminal_timer():
    ref, w = episode()
    w.run(0.3)
    w.move("std_50", "pan", settle_s=0.0)
    w.run(1.5)  # confirmation
    started = w.events("terminal_dwell_started")[0]["t"]
    w.run(started + 2.0 - w.t)
    w.bump("std_50")
    w.run(0.2)
    resets = w.events("terminal_dwell_reset")
    assert resets and "motion" in resets[0]["detail"]["failures"]
    assert not ref.scores()["physically_complete"]
    w.run(5.0)
    done = w.events("task_complete")[0]["t"]
    restart = w.events("terminal_dwell_started")[-1]["t"]
    assert restart > resets[0]["t"] and abs(done - restart - 3.0) < 1e-6
    assert done - started > 3.0 + 1.0  # the first 2 s did not count


def test_reading_under_hand_pressure_never_completes():
    # Correct load on the pan, but the hand presses the pan: reading on target, never eligible.
    ref, w = episode(instance(180, 130, ("std_50",)))
    w.run(0.3)
    w.grasp("std_50")
    w.put("std_50", "pan", release=False, settle_s=0.0)
    w.hand_on_pan = True
    w.run(8.0)
    assert not ref.scores()["physically_complete"] and not w.events("task_complete")
    assert w.events("hand_pressure")
    # Hand pressure that fakes the target reading with the wrong weight is no better.
    ref2, w2 = episode(instance(180, 130, ("std_50",)))
    w2.run(0.3)
    w2.press_pan(8.0, extra_g=50.0)
    assert not ref2.scores()["physically_complete"]
    assert ref2.state()["locations"]["std_50"] == "table"


def test_weight_missing_the_pan_leaves_the_obligation_open():
    ref, w = episode()
    w.run(0.3)
    w.move("std_50", "table")  # dropped beside the balance
    assert w.events("execution_failure")[0]["object"] == "std_50"
    assert ref.state()["obligations"]["std_50"]["status"] == "open"
    assert ops(ref) == ["add(std_50->pan)"]
    # The failed attempt is new evidence: a new opportunity opens.
    assert [o.trigger for o in ref.opportunities][:2] == ["initial_readiness", "failed_attempt"]


def test_correct_choice_then_drop_gets_choice_credit_and_execution_failure():
    ref, w = episode()
    w.run(0.3)
    w.move("std_50", "floor")
    s = ref.scores()
    assert s["first_choice_correct"] is True and s["executed"] is False
    assert s["execution"]["failed"] == 1 and ref.opportunities[0].execution == "failed"


def test_repeated_contact_cannot_complete_an_obligation_twice():
    ref, w = episode()
    w.run(0.3)
    w.move("std_50", "pan")
    w.grasp("std_50")  # re-touch the completed weight and put it back
    w.put("std_50", "pan")
    w.run(4.0)
    assert len(w.events("obligation_confirmed")) == 1
    assert w.events("unnecessary_repetition")
    s = ref.scores()
    assert s["physically_complete"] and s["completion_class"] == "recovered"


def test_premature_advancement_before_confirmation_is_recorded():
    inst = instance(220, 100, ("std_20", "std_100"), start=("std_50",), condition="extended")
    ref, w = episode(inst)
    w.run(0.3)
    w.grasp("std_50")
    w.run(0.2)
    w.put("std_50", "table", settle_s=0.3)  # released; confirmation still pending
    w.grasp("std_100")
    assert w.events("premature_advancement")
    assert not w.events("choice_revision")


def test_choice_revision_keeps_its_own_timestamp_and_first_choice_stays_frozen():
    ref, w = episode()
    w.run(0.3)
    w.grasp("std_10")
    w.release("std_10")
    w.place["std_10"] = "held"  # still moving in the air, not placed anywhere
    w.run(0.2)
    w.grasp("std_50")
    rev = w.events("choice_revision")
    assert rev and rev[0]["object"] == "std_50"
    opp = ref.opportunities[0]
    assert str(opp.first_choice) == "add(std_10->pan)" and opp.revisions[0]["t"] == rev[0]["t"]
    assert opp.choice_correct is False


def test_early_termination_by_explicit_stop():
    ref, w = episode()
    w.run(0.3)
    rep = ref.report_operation({"type": "stop"}, w.t)[0]
    assert rep["scored"] and rep["correct"] is False
    assert any(e["category"] == "early_termination" for e in ref.events)
    ref2, w2 = episode()
    w2.run(0.3)
    out = ref2.finish(w2.t, "policy_stop")
    assert out[-1]["categories"]["early_termination"] == 1 and out[-1]["physically_complete"] is False


def test_no_choice_by_the_deadline_is_unidentified():
    ref, w = episode()
    w.run(0.3)
    w.run(ref.contract.opportunities.response_window_s + 1.0)
    opp = ref.opportunities[0]
    assert opp.status == "closed" and opp.close_reason == "window_expired"
    s = ref.scores()
    assert s["native"]["population"] == 1 and s["native"]["C_id"] == 0.0 and s["native"]["B_next"] == 0.0
    assert s["native"]["accuracy_identified"] is None  # zero denominator: unavailable, not 0


def test_wait_legal_while_unstable_then_stop_only_when_complete():
    ref, w = episode(start_stable=False)
    w.run(0.3)
    assert ops(ref) == ["wait"]
    rep = ref.report_operation({"type": "wait"}, w.t)[0]
    assert rep["correct"] is True
    w.run(1.0)
    assert ops(ref) == ["add(std_50->pan)"]
    w.move("std_50", "pan")
    assert ops(ref) == ["wait"]
    w.run(4.0)
    assert ops(ref) == ["stop"]
    # The referee ended the episode at completion: a Stop reported now is late,
    # recorded but not scored, and never an early termination.
    late_stop = ref.report_operation({"type": "stop"}, w.t)[0]
    assert late_stop["reason"] == "late" and late_stop["scored"] is False
    assert not any(e["category"] == "early_termination" for e in ref.events)
    # docs/records.md ("Stop is not scored on this version"): earlier versions opened a
    # fourth opportunity ({Stop}) on the delivery after completion and scored the Stop
    # (explicit track 4 opportunities, 2 correct); now there are 3, the Wait the only
    # scored report.
    scores = ref.finish(w.t, "episode_end")[-1]
    assert scores["opportunities"] == 3 and [o.id for o in ref.opportunities] == [1, 2, 3]
    assert ref.late_inputs["observation"] >= 1
    assert (scores["explicit"]["population"], scores["explicit"]["correct"]) == (3, 1)


def test_incomplete_pairs_report_bounds_not_a_rate():
    # Two pairs verified correct, one incorrect, one unresolved (a member never ran).
    r = p_state([(True, True), (True, True), (True, False), (True, None)])
    assert r["P_state"] is None and r["lower"] == 0.5 and r["upper"] == 0.75
    assert p_state([(True, True), (False, True)])["P_state"] == 0.5
    assert p_state([])["P_state"] is None
    # A list that lost one member keeps the other out of the pair population.
    a, b = instance(iid="p-a"), instance(iid="p-b")
    from dataclasses import replace
    a, b = replace(a, pair_id="p", pair_role="a"), replace(b, pair_id="p", pair_role="b")
    lone = replace(instance(iid="q-a"), pair_id="q", pair_role="a")
    assert pairs_of([a, b, lone]) == [(a, b)]


def test_sample_displacement_is_irreversible():
    ref, w = episode()
    w.run(0.3)
    w.move("sample", "table")
    w.move("sample", "pan")
    w.move("std_50", "pan")
    w.run(4.0)
    s = ref.scores()
    assert s["physically_complete"] and not s["valid_complete"] and s["completion_class"] == "invalid"
    assert "sample_displaced" in s["violations"]


def test_unreleased_removal_onto_the_table_is_not_counted():
    # Off the pan the reading is eligible, so only the release check can refuse it.
    inst = instance(220, 100, ("std_20", "std_100"), start=("std_50",), condition="extended")
    ref, w = episode(inst)
    w.run(0.3)
    w.grasp("std_50")
    w.put("std_50", "table", release=False, settle_s=4.0)
    assert ref.state()["locations"]["std_50"] == "pan"
    assert not w.events("execution_confirmed")


def test_obligations_are_keyed_by_instance_and_untracked_moves_confirm_nothing():
    ref, w = episode()
    w.run(0.3)
    w.move("std_10", "floor")  # no obligation for std_10: moving it off the table completes nothing
    assert not w.events("obligation_confirmed")
    w.move("std_50", "pan")
    w.move("std_50", "table")  # regression reopens the obligation as a new instance
    w.move("std_50", "pan")
    confirmed = [e["detail"]["obligation"] for e in w.events("obligation_confirmed")]
    assert confirmed == ["std_50:pan#1", "std_50:pan#2"]


def test_tidying_the_table_does_not_disturb_the_terminal_window_but_touching_the_load_does():
    ref, w = episode()
    w.run(0.3)
    w.move("std_50", "pan", settle_s=1.5)
    w.move("std_10", "floor", settle_s=0.0)  # a table weight moved during the window
    assert not w.events("terminal_dwell_reset")
    w.run(3.0)
    assert ref.scores()["physically_complete"]
    ref2, w2 = episode()
    w2.run(0.3)
    w2.move("std_50", "pan", settle_s=1.5)
    w2.fingers.add("std_50")  # the hand rests on the load
    w2.run(0.1)
    assert "robot_contact" in w2.events("terminal_dwell_reset")[0]["detail"]["failures"]
