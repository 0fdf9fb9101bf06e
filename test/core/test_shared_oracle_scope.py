"""The scope check every family's referee uses (core/oracle_scope.py), on a family-free
set of sites: binding, hidden and undeclared fields, the operation's shape and legality,
and a family's own per-site check beside them."""
from labference_ros.core.operations import Operation
from labference_ros.core.oracle_scope import (
    OracleSites,
    check_scope,
    intervention_payload_id,
    payload_id,
)

SITES = OracleSites(sites=("state", "decision"), state_payload_keys=("label",), decision_payload_keys=("operation",),
                    hidden_keys=("secret",))
LEGAL = (Operation("pick", "thing", "here"),)
TYPES = ("pick", "wait")


def check(site, payload, *, mode="replace", opp=3, ver=5, **kwargs):
    iv = {"mode": mode, "site": site, "opportunity_id": opp, "evidence_version": ver, "payload": payload}
    return check_scope(iv, SITES, current_opportunity_id=3, current_evidence_version=5, legal_set=LEGAL,
                       operation_types=TYPES, **kwargs)


def test_an_in_scope_payload_is_delivered_with_its_id():
    d = check("state", {"label": "x"})
    assert d.ok and d.reasons == () and d.payload_id == payload_id({"label": "x"})
    assert check("decision", {"operation": {"type": "pick", "object": "thing", "destination": "here"}}).ok
    assert intervention_payload_id({"payload": '{"label": "x"}'}) == d.payload_id  # a JSON string is parsed


def test_every_refusal_has_its_reason_in_order():
    d = check("telepathy", {"label": "x", "secret": {"deep": 1}, "extra": 2}, mode="whisper", opp=2, ver=4)
    assert d.reasons == ("unknown_mode:whisper", "unsupported_site:telepathy", "stale_or_unbound_opportunity",
                         "stale_evidence_version", "hidden_fields:secret")
    d = check("state", {"label": "x", "nested": [{"SECRET": 1}]}, hidden_values={"mass": 1})
    assert d.reasons == ("hidden_fields:secret", "undeclared_fields:nested")
    assert check("state", {"mass_info": 1, "x": {"mass": 2}}, hidden_values={"mass": 1}).reasons == \
        ("hidden_fields:mass", "undeclared_fields:mass_info,x")
    assert check("state", "not json").reasons == ("payload_not_json",)
    assert check("state", [1]).reasons == ("payload_not_object",)
    assert check("state", {"label": "x"}, opp=None).reasons == ("stale_or_unbound_opportunity",)


def test_a_decision_is_exactly_one_legal_operation_without_coordinates():
    op = {"type": "pick", "object": "thing", "destination": "here"}
    assert check("decision", {"operation": [op, op]}).reasons == ("not_exactly_one_operation",)
    assert check("decision", {}).reasons == ("missing_operation",)
    assert check("decision", {"operation": {**op, "position": [1.0]}}).reasons == \
        ("operation_fields:position", "coordinates_in_operation")
    assert check("decision", {"operation": {**op, "destination": 3}}).reasons == \
        ("coordinates_in_operation", "operation_not_legal")
    assert check("decision", {"operation": {**op, "type": "fly"}}).reasons == ("unknown_operation_type",)
    assert check("decision", {"operation": {**op, "destination": "there"}}).reasons == ("operation_not_legal",)


def test_a_familys_own_site_check_runs_after_the_shared_ones():
    def label_known(payload):
        return [] if payload.get("label") in ("x", "y") else ["label_invalid"]

    assert check("state", {"label": "z"}, site_checks={"state": label_known}).reasons == ("label_invalid",)
    assert check("state", {"label": "z", "secret": 1}, site_checks={"state": label_known}).reasons == \
        ("hidden_fields:secret", "undeclared_fields:secret", "label_invalid")
    assert check("state", {"label": "y"}, site_checks={"state": label_known}).ok
