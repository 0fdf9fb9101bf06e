from dataclasses import replace

from labference_ros.tasks.weighing.contract import contract_for, weighing_basic, weighing_extended


def test_contracts_declare_versions_and_stable_hashes():
    b, e = weighing_basic(), weighing_extended()
    assert b.content_hash == weighing_basic().content_hash
    assert b.content_hash != e.content_hash
    assert b.targets_g == (160, 180, 200) and e.targets_g == (200, 220, 240)
    assert b.goal_size == (1, 1) and e.goal_size == (2, 3) and e.min_start_goal_edits == 2
    assert b.identity()["id"] == "feedback_weighing.basic@1.1.0"
    assert contract_for("extended") == e


def test_any_threshold_change_changes_the_hash():
    b = weighing_basic()
    changed = replace(b, terminal=replace(b.terminal, dwell_s=2.0))
    assert changed.content_hash != b.content_hash


def test_recognisers_are_looser_than_confirmation_and_terminal_predicates():
    c = weighing_basic()
    assert c.recognisers.low_motion_linear_mps > c.confirmation.linear_mps
    assert c.recognisers.low_motion_angular_rps > c.confirmation.angular_rps
    assert c.recognisers.low_motion_linear_mps > c.terminal.linear_mps
    assert c.terminal.reading_tolerance_g == 1.0 and c.terminal.dwell_s == 3.0


def test_contract_has_the_six_elements():
    d = weighing_basic().to_dict()
    for key in ("state_variables", "authorized_evidence", "operation_types", "confirmation",
                "terminal", "diagnostics"):
        assert d[key]
