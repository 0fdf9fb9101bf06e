"""Placement recall's Oracle sites (paper 6): state (where the target stands now, in the
rack's own labels) and decision (which hole to retrieve from), each in Assist and Replace,
scope-checked by the referee with the check every family shares (core/oracle_scope.py).
On scripted measurement streams (no simulator)."""
from __future__ import annotations

import math
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from test_placement_referee import Stream, place_with_deviation  # noqa: E402

from labference_ros.core.operations import WAIT_OP, insert  # noqa: E402
from labference_ros.tasks import family  # noqa: E402
from labference_ros.tasks.placement_recall.instances import TARGET, generate  # noqa: E402
from labference_ros.tasks.placement_recall.oracle_scope import decision_rule, state_payload  # noqa: E402
from labference_ros.tasks.placement_recall.rack import hole_positions, hole_under  # noqa: E402
from labference_ros.tasks.placement_recall.task_state import retrieve  # noqa: E402

FAMILY = family("placement_recall")
HOLE = "B2"


def turned_instance():
    return next(i for i in generate("extended", "same", 4, task_seed=0, layout_seed=7, policy_seed=0)
                if i.movement == "rotate_180" and HOLE not in i.distractors.values())


def at_retrieval(turn: float = math.pi) -> Stream:
    """The target placed in B2, the rack turned (half a turn) while occluded, the first
    observation after it delivered: the retrieval's opportunity is open."""
    s = Stream(turned_instance(), "extended")
    place_with_deviation(s, intended=HOLE, settled=HOLE)
    s.turn_rack(turn)
    s.step(2)
    s.observe()
    return s


def intervention(s: Stream, site: str, payload, mode: str = "replace", **binding) -> dict:
    opp = s.referee.book.current
    return {"mode": mode, "site": site, "payload": payload, **{"opportunity_id": opp.id,
            "evidence_version": s.referee.z.evidence_version, **binding}}


def check(s: Stream, iv: dict) -> dict:
    (receipt,) = [r for r in s.referee.check_intervention(iv, s.t) if r["record"] == "receipt"]
    return receipt


def test_the_contract_declares_state_and_decision_sites():
    c = FAMILY.contract_for("extended-same")
    assert c.diagnostics.sites == ("state", "decision")
    assert c.diagnostics.state_payload_keys == ("target_hole", "occupied_holes")
    assert {"placed_hole", "legal_set", "movement", "transitions"} <= set(c.diagnostics.hidden_keys)
    assert c.contract_id == "placement_recall.extended-same@0.3.0"


def test_the_state_names_the_targets_hole_by_the_racks_label_after_a_half_turn():
    s = at_retrieval()
    m = s.measurement()
    payload = state_payload(m, s.instance, s.contract)
    assert payload["target_hole"] == HOLE  # the label moved with the rack
    assert payload["occupied_holes"] == sorted([HOLE, *s.instance.distractors.values()])
    # ... while the hole now standing at the placed hole's old world position is another one.
    old = hole_positions(s.contract.rack, s.instance.rack_pose)[HOLE]
    assert hole_under(old, s.contract.rack, s.pose) not in ("", HOLE)


def test_the_decision_rule_supplies_the_retrieval_else_the_first_legal_operation():
    assert decision_rule((retrieve(TARGET, "C1"),)) == retrieve(TARGET, "C1")
    assert decision_rule((WAIT_OP,)) == WAIT_OP
    assert decision_rule((insert(TARGET, "B1"), insert(TARGET, "A3"))) == insert(TARGET, "A3")
    assert FAMILY.decision_rule((retrieve(TARGET, HOLE),)) == retrieve(TARGET, HOLE)


def test_the_referee_delivers_a_state_and_a_legal_retrieval_in_scope():
    s = at_retrieval()
    state = state_payload(s.measurement(), s.instance, s.contract)
    r = check(s, intervention(s, "state", state))
    assert (r["status"], r["reasons"], r["site"], r["mode"]) == ("delivered", [], "state", "replace")
    assert len(r["payload_id"]) == 64  # the payload's sha256, as every family's receipts carry
    r = check(s, intervention(s, "decision", {"operation": retrieve(TARGET, HOLE).to_dict()}, mode="assist"))
    assert (r["status"], r["reasons"]) == ("delivered", [])


@pytest.mark.parametrize("site, payload, mode, binding, reason", [
    ("state", {"target_hole": HOLE}, "replace", {"opportunity_id": 1}, "stale_or_unbound_opportunity"),
    ("state", {"target_hole": HOLE}, "replace", {"evidence_version": 1}, "stale_evidence_version"),
    ("state", {"target_hole": HOLE, "placed_hole": HOLE}, "replace", {}, "hidden_fields:placed_hole"),
    ("state", {"target_hole": HOLE, "occupied_holes": [{"movement": "rotate_180"}]}, "assist", {},
     "hidden_fields:movement"),
    ("state", {"target_hole": HOLE, "rack_pose": [0.5, 0.0, 0.0, 3.14]}, "replace", {},
     "undeclared_fields:rack_pose"),
    ("state", {"target_hole": "D9"}, "replace", {}, "target_hole_invalid"),
    ("state", {"occupied_holes": "B2"}, "replace", {}, "occupied_holes_invalid"),
    ("decision", {"operation": retrieve(TARGET, "A1").to_dict()}, "replace", {}, "operation_not_legal"),
    ("decision", {"operation": {**retrieve(TARGET, HOLE).to_dict(), "position": [0.5, 0.1, 0.2]}}, "replace",
     {}, "coordinates_in_operation"),
    ("decision", {"operation": [retrieve(TARGET, HOLE).to_dict()] * 2}, "replace", {}, "not_exactly_one_operation"),
    ("geometry", {"candidates": []}, "assist", {}, "unsupported_site:geometry"),
    ("state", {"target_hole": HOLE}, "suggest", {}, "unknown_mode:suggest"),
])
def test_the_referee_refuses_what_is_out_of_scope(site, payload, mode, binding, reason):
    s = at_retrieval()
    r = check(s, intervention(s, site, payload, mode=mode, **binding))
    assert r["status"] == "rejected_scope" and reason in r["reasons"], r["reasons"]


def test_the_refusals_read_as_every_familys():
    # One stale, leaking intervention: placement recall, weighing and centrifuge refuse it with
    # the same reasons, since they share one scope check.
    from labference_ros.core.oracle_scope import check_scope

    bad = {"mode": "replace", "site": "decision", "opportunity_id": 99, "evidence_version": 99,
           "payload": {"operation": {"type": "wait"}, "legal_set": []}}
    reasons = set()
    for task, condition in (("placement_recall", "extended-same"), ("feedback_weighing", "basic"),
                            ("centrifuge_loading", "basic")):
        contract = family(task).contract_for(condition)
        d = check_scope(bad, contract.diagnostics, current_opportunity_id=1, current_evidence_version=2,
                        legal_set=(WAIT_OP,), operation_types=contract.operation_types)
        reasons.add(d.reasons)
    assert reasons == {("stale_or_unbound_opportunity", "stale_evidence_version", "hidden_fields:legal_set",
                        "undeclared_fields:legal_set")}
    s = at_retrieval()
    r = check(s, {**bad, "opportunity_id": 99})
    assert r["reasons"][:3] == ["stale_or_unbound_opportunity", "stale_evidence_version", "hidden_fields:legal_set"]


def test_after_the_episode_an_intervention_is_late():
    s = at_retrieval()
    s.referee.finish(s.t, "test")
    (r,) = s.referee.check_intervention(intervention(s, "state", {"target_hole": HOLE}), s.t)
    assert (r["status"], r["reasons"]) == ("late", ["late"])
