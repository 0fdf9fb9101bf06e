"""Placement recall's Oracle sites (paper 6): state (where the target stands now, in the
rack's own labels) and decision (which hole to retrieve from), each in Assist and Replace,
scope-checked by the referee with the check every family shares (core/oracle_scope.py);
the reference systems take a supplied hole in place of their own. On scripted measurement
streams and evaluator views (no simulator); the matched continuations through the
simulator are in test_placement_oracle_continuations.py."""
from __future__ import annotations

import json
import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

from test_placement_referee import Stream, place_with_deviation  # noqa: E402

from labference_ros.core.operations import WAIT_OP, Operation, insert  # noqa: E402
from labference_ros.core.system import EvaluatorView  # noqa: E402
from labference_ros.oracle.supports import COMPATIBLE, Support, compatibility  # noqa: E402
from labference_ros.policies import make  # noqa: E402
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


# ----------------------------------------------------------------------------- systems
def view(s: Stream) -> EvaluatorView:
    """The evaluator view at the stream's state, as FAMILY.evaluator_view gives it."""
    return FAMILY.evaluator_view(s.instance, s.measurement())


@pytest.mark.parametrize("name", ["scripted_expert", "label_memory", "world_position", "cap_colour",
                                  "label_memory_pixels", "cap_colour_pixels"])
def test_the_reference_systems_accept_state_and_decision_in_both_modes(name):
    system = make(name, task="placement_recall")
    for mode in ("assist", "replace"):
        for site in ("state", "decision"):
            assert compatibility(system, Support(mode, site)) == COMPATIBLE
    assert compatibility(system, Support("replace", "geometry")) == "incompatible:no_geometry_interface"


def world_position_placed_in(s: Stream):
    """world_position as after its placement into B2 (before the turn): it remembers the
    world position where it let the tube go."""
    system = make("world_position", task="placement_recall")
    system.reset("s", 0)
    system.chosen_hole = HOLE
    rack = s.contract.rack
    system.released_at = hole_positions(rack, s.instance.rack_pose)[HOLE] + \
        np.array([0.0, 0.0, s.contract.tube.length_m / 2 - rack.depth_m])
    system.stage = "retrieve"
    return system


@pytest.mark.parametrize("support", [None, ("state", {"target_hole": HOLE, "occupied_holes": []}),
                                     ("decision", {"operation": retrieve(TARGET, HOLE).to_dict()})])
def test_world_position_reaches_into_the_supplied_hole_of_the_turned_rack(support):
    s = at_retrieval()
    ev = view(s)
    system = world_position_placed_in(s)
    own = system.believed_hole(ev)
    assert own not in (None, HOLE)  # its own state: the hole now at its remembered world position
    if support is not None:
        system.supply(support[0], "replace", support[1])

    class Obs:  # decide reads the time alone at the retrieval
        sim_time = s.t

    move = system.decide(Obs(), ev)
    where = np.asarray(move[1])
    (entry,) = system.interface_log
    assert entry["state_original"] == {"target_hole": own}
    if support is None:  # where it let go: the other hole's place now
        assert np.allclose(where, system.released_at)
        assert entry["operation_used"] == retrieve(TARGET, own).to_dict()
        return
    assert np.allclose(where, ev.positions[TARGET], atol=1e-6)  # the target, in B2 of the turned rack
    assert entry["operation_used"] == retrieve(TARGET, HOLE).to_dict()
    if support[0] == "state":
        assert entry["state_used"] == {"target_hole": HOLE} and entry["operation_original"] == entry["operation_used"]
    else:
        assert entry["operation_original"] == retrieve(TARGET, own).to_dict()
    assert system.drain_reports()[0]["operation"] == retrieve(TARGET, HOLE).to_dict()  # its commitment


def test_a_support_before_the_occlusion_is_followed_by_the_wait_it_holds():
    s = Stream(turned_instance(), "extended")
    place_with_deviation(s, intended=HOLE, settled=HOLE)
    system = world_position_placed_in(s)
    system.stage = "wait"
    system.supply("decision", "replace", {"operation": WAIT_OP.to_dict()})

    class Obs:
        sim_time = s.t
        images: dict = {}

    assert system.decide(Obs(), view(s)) is None
    (entry,) = system.interface_log
    assert entry["operation_original"] == entry["operation_used"] == WAIT_OP.to_dict()
    assert entry["state_original"] == {"target_hole": HOLE}
    assert system.decide(Obs(), view(s)) is None and len(system.interface_log) == 1  # once per delivery


def test_a_supplied_placement_hole_takes_the_place_of_its_own():
    s = Stream(turned_instance(), "extended")
    system = make("scripted_expert", task="placement_recall")
    system.reset("s", 0)
    free = next(h for h in ("C4", "A1", "C1") if h not in s.instance.distractors.values())
    system.supply("decision", "assist", {"operation": insert(TARGET, free).to_dict()})

    class Obs:
        sim_time = 0.0

    move = system.decide(Obs(), view(s))
    assert system.chosen_hole == free
    assert np.allclose(move[2][1], hole_positions(s.contract.rack, s.pose)[free])
    (entry,) = system.interface_log
    assert entry["operation_used"] == Operation("insert", TARGET, free).to_dict()


def test_over_topics_the_oracle_checks_a_retrieval_with_this_familys_operations():
    # The topic oracle (oracle/service.py) checks scope as the referee does: the family's
    # operation types and site checks, not weighing's. Its state payload is weighing's
    # display reading, so this family's state has no facts there.
    from labference_ros.oracle.service import NO_FACTS, OracleService

    service = OracleService("replace:decision+replace:state", "extended-same", "placement_recall")
    out = service.on_opportunity_legal_set("ep", 3, 4, (retrieve(TARGET, HOLE),), {}, 1.0)
    by_site = {json.loads(receipt["detail_json"])["site"]: (iv, receipt) for iv, receipt in out}
    iv, receipt = by_site["decision"]
    assert receipt["status"] == "delivered" and iv["payload"] == {"operation": retrieve(TARGET, HOLE).to_dict()}
    assert by_site["state"][1]["status"] == NO_FACTS
