"""Unsupported interventions are rejected before delivery (paper 8.5)."""
import pytest

from labference_ros.tasks.weighing.contract import weighing_basic
from labference_ros.core.operations import add
from labference_ros.tasks.weighing.oracle_scope import payload_id, validate_intervention

C = weighing_basic()
LEGAL = (add("std_50"),)


def check(site, payload, opp=3, ver=5, mode="assist"):
    iv = {"mode": mode, "site": site, "opportunity_id": opp, "evidence_version": ver, "payload": payload}
    return validate_intervention(iv, C, current_opportunity_id=3, current_evidence_version=5, legal_set=LEGAL,
                                 hidden_values={"sample_mass_g": 130.0})


def test_state_payload_may_carry_displayed_load_and_stability():
    d = check("state", {"displayed_g": 130.0, "stable": True, "standards_on_pan": []})
    assert d.ok, d.reasons
    assert d.payload_id == payload_id({"displayed_g": 130.0, "stable": True, "standards_on_pan": []})


@pytest.mark.parametrize("payload", [
    {"displayed_g": 130.0, "sample_mass_g": 130.0},
    {"displayed_g": 130.0, "required_standard": "std_50"},
    {"stable": True, "goal_set": ["std_50"]},
    {"stable": True, "hint": {"legal_set": ["add std_50"]}},
])
def test_state_payload_never_carries_hidden_facts(payload):
    d = check("state", payload)
    assert not d.ok


def test_decision_payload_is_one_legal_operation_without_coordinates():
    assert check("decision", {"operation": {"type": "add", "object": "std_50", "destination": "pan"}}).ok
    bad = [
        {"operation": {"type": "add", "object": "std_20", "destination": "pan"}},  # not legal
        {"operation": [{"type": "add", "object": "std_50", "destination": "pan"}] * 2},  # two
        {"operation": {"type": "add", "object": "std_50", "destination": "pan", "position": [0.5, 0.2, 0.1]}},
        {"operation": {"type": "add", "object": "std_50", "destination": "pan"}, "position": [0.5, 0.2]},
        {"operation": {"type": "add", "object": "std_50", "destination": [0.5, 0.2]}},
        {},
    ]
    for p in bad:
        assert not check("decision", p).ok, p


def test_binding_to_a_stale_opportunity_or_evidence_is_rejected():
    p = {"displayed_g": 130.0, "stable": True}
    assert "stale_or_unbound_opportunity" in check("state", p, opp=2).reasons
    assert "stale_evidence_version" in check("state", p, ver=4).reasons


def test_unsupported_site_or_mode_is_rejected():
    assert not check("telepathy", {"x": 1}).ok
    assert not check("state", {"stable": True}, mode="whisper").ok


def test_geometry_and_skill_sites():
    assert check("geometry", {"object": "std_50", "position": [0.5, 0.1, 0.07]}).ok
    assert not check("geometry", {"object": "std_50", "position": [0.5, 0.1], "sample_mass_g": 1}).ok
    frame = {"object": "std_20", "position": [0.5, 0.1, 0.03], "axis": [0, 0, 1]}
    assert check("geometry", {"candidates": [frame, {**frame, "object": "std_50"}]}, mode="assist").ok
    # A candidate list may not smuggle an unknown object or an undeclared field.
    assert not check("geometry", {"candidates": [{**frame, "object": "sample"}]}, mode="assist").ok
    assert not check("geometry", {"candidates": [{**frame, "mass_g": 20}]}, mode="assist").ok
    assert not check("geometry", {"candidates": [{**frame, "goal_set": ["std_20"]}]}, mode="assist").ok
    assert check("skill", {"operation": {"type": "add", "object": "std_20", "destination": "pan"}}, mode="replace").ok


def test_referee_records_intervention_receipts_bound_to_the_current_opportunity():
    from referee_streams import episode
    ref, w = episode()
    w.run(0.3)
    opp = ref.opportunities[-1]
    good = {"mode": "assist", "site": "decision", "opportunity_id": opp.id,
            "evidence_version": opp.evidence_version,
            "payload": {"operation": {"type": "add", "object": "std_50", "destination": "pan"}}}
    r = ref.check_intervention(good, w.t)[0]
    assert r["kind"] == "intervention" and r["status"] == "delivered"
    leak = dict(good, site="state", payload={"displayed_g": 130.0, "sample_mass_g": 130.0})
    assert ref.check_intervention(leak, w.t)[0]["status"] == "rejected_scope"
    w.move("std_50", "pan")  # evidence changed: the old binding is stale
    assert ref.check_intervention(good, w.t)[0]["status"] == "rejected_scope"
