"""Scope refusal, compatibility status, population files and the gain table,
without running the simulator."""
import json

import pytest

from labference_ros.core.operations import add
from labference_ros.oracle.checkpoints import (CheckpointSpec, population_from_instances, prepare,
                                               read_population, write_population)
from labference_ros.oracle.continuation import BranchResult, run_branch
from labference_ros.oracle.gains import condition_row
from labference_ros.oracle.supports import COMPATIBLE, Support, compatibility, parse_condition
from labference_ros.policies import make
from labference_ros.tasks.weighing.contract import weighing_basic
from labference_ros.tasks.weighing.instances import generate
from labference_ros.tasks.weighing.oracle_scope import validate_intervention

INSTANCE = generate("basic", 1, task_seed=1, layout_seed=100, policy_seed=0)[0]


def _state(payload):
    return validate_intervention({"mode": "assist", "site": "state", "opportunity_id": 1,
                                  "evidence_version": 1, "payload": payload}, weighing_basic(),
                                 current_opportunity_id=1, current_evidence_version=1,
                                 hidden_values={"sample_mass_g": INSTANCE.sample_mass_g,
                                                "goal_set": INSTANCE.goal_set})


@pytest.mark.parametrize("leak", [{"sample_mass_g": 150.0}, {"required_standard": "std_10"},
                                  {"required_standards": ["std_10"]}])
def test_state_payload_with_hidden_facts_is_refused(leak):
    ok = _state({"displayed_g": 150.0, "stable": True})
    assert ok.ok, ok.reasons
    bad = _state({"displayed_g": 150.0, "stable": True, **leak})
    assert not bad.ok and any(r.startswith("hidden_fields") for r in bad.reasons)


def test_action_only_system_gets_a_compatibility_status():
    fp = make("fixed_preference")
    for site in ("state", "decision", "geometry", "skill"):
        assert compatibility(fp, Support("replace", site)) == "incompatible:action_only"
    mr = make("misreader")
    assert compatibility(mr, Support("replace", "state")) == COMPATIBLE
    assert compatibility(mr, Support("assist", "geometry")) == COMPATIBLE

    class StateOnly:  # a modular system that declares only a state-report hook
        def interfaces(self):
            return {"state": ("replace",)}
    assert compatibility(StateOnly(), Support("assist", "geometry")) == "incompatible:no_geometry_interface"
    assert compatibility(StateOnly(), Support("assist", "state")) == "incompatible:assist_not_accepted_at_state"
    assert compatibility(mr, Support("assist", "skill")) == "incompatible:assist_not_accepted_at_skill"


def test_fixed_preference_branch_is_not_run_under_report_hooks():
    """Compatibility is decided before any simulation: no checkpoint needed."""
    cp = prepare(CheckpointSpec("bad", INSTANCE, (add("std_404"),)))
    assert cp.status == "preparation_failed"  # the failure is kept with its reason
    assert "infeasible" in cp.reason
    r = run_branch(cp, "fixed_preference", parse_condition("replace:state"))
    assert r.status == "incompatible:action_only" and r.receipts == []


def test_population_file_round_trip(tmp_path):
    specs = population_from_instances([INSTANCE], prefix=(add("std_20"),))
    path = tmp_path / "population.jsonl"
    write_population(path, specs)
    back = read_population(path)
    assert back == specs and back[0].expected_state() == {"on_pan": ["std_20"]}
    path.write_text(path.read_text() * 2)
    with pytest.raises(ValueError):
        read_population(path)
    json.loads(path.read_text().splitlines()[0])


def _b(cid, choice, done, status="ok"):
    return BranchResult(cid, "x", status, choice_correct=choice, completed=done)


def test_gain_table_and_provisional_bounds():
    base = [_b("a", False, False), _b("b", True, False), _b("c", False, False)]
    sup = [_b("a", True, True), _b("b", True, True), _b("c", False, False)]
    row = condition_row(base, sup)
    assert row["gain_choice_correct"] == pytest.approx(1 / 3)
    assert row["gain_completed"] == pytest.approx(2 / 3)
    # An unresolved pair: no gain, only bounds s/N and (s+u)/N.
    sup[2] = _b("c", None, None, status="unresolved")
    row = condition_row(base, sup)
    assert row["gain_completed"] is None and row["unresolved"] == 1
    assert row["completed_bounds"] == (pytest.approx(2 / 3), pytest.approx(1.0))
    # A supported success whose base member is unresolved counts once: the bound stays within 1.
    base[0] = _b("a", None, None, status="unresolved")
    row = condition_row(base, sup)
    assert row["gain_completed"] is None and row["unresolved"] == 2
    assert row["completed_bounds"] == (pytest.approx(2 / 3), pytest.approx(1.0))
    inc = condition_row(base, [_b(x, None, None, "incompatible:action_only") for x in "abc"])
    assert inc["compatibility"] == "incompatible:action_only" and "gain_completed" not in inc


def test_topic_oracle_answers_every_support_once_per_opportunity():
    from labference_ros.core.operations import WAIT_OP
    from labference_ros.oracle.service import OracleService
    svc = OracleService("replace:state+assist:decision")
    ready = {"reading_ready": True, "last_stable_reading_g": 150.0}
    assert svc.on_opportunity_legal_set("ep", -1, 1, (add("std_10"),), ready) == []  # not bound to an opportunity
    out = svc.on_opportunity_legal_set("ep", 1, 1, (add("std_10"), WAIT_OP), ready)
    assert [iv["site"] for iv, _ in out] == ["decision", "state"]
    assert all(r["status"] == "delivered" and iv["opportunity_id"] == 1 for iv, r in out)
    assert out[0][0]["payload"] == {"operation": add("std_10").to_dict()}
    assert out[1][0]["payload"] == {"displayed_g": 150.0, "stable": True}  # from the evidence, not a live reading
    assert svc.on_opportunity_legal_set("ep", 1, 1, (add("std_10"),), ready) == []  # once per site
    # No certified reading at the next opportunity: a definite receipt, nothing delivered.
    out = svc.on_opportunity_legal_set("ep", 2, 2, (WAIT_OP,), {"reading_ready": False})
    assert [(iv, r["status"]) for iv, r in out] == [(out[0][0], "delivered"), (None, "no_facts")]
    # A new episode restarts the bindings and the intervention ids.
    again = svc.on_opportunity_legal_set("ep2", 1, 1, (add("std_10"),), ready)
    assert len(again) == 2 and again[0][0]["intervention_id"] == "ep2:i00001"
    assert OracleService("none").on_opportunity_legal_set("ep", 1, 1, (add("std_10"),), ready) == []
    with pytest.raises(ValueError):
        OracleService("replace:skill")
    with pytest.raises(ValueError):
        OracleService("replace:geometry")  # needs the hook at the system's output: in-process only


def test_topic_geometry_assist_waits_for_the_world_state_of_its_opportunity():
    from types import SimpleNamespace

    from labference_ros.oracle.service import OracleService
    svc = OracleService("assist:geometry")
    std = lambda x: SimpleNamespace(kind="standard", position=(x, 0.1, 0.02), orientation=(1, 0, 0, 0))  # noqa: E731
    sample = SimpleNamespace(kind="sample", position=(0.5, 0.0, 0.1), orientation=(1, 0, 0, 0))
    assert svc.on_world(0.5, {"std_10": std(0.3)}) == []
    # The opportunity at t = 1.0 waits: no world state of that instant yet.
    assert svc.on_opportunity_legal_set("ep", 1, 1, (add("std_10"),), {}, t=1.0) == []
    (iv, receipt), = svc.on_world(1.0, {"std_10": std(0.4), "std_20": std(0.45), "sample": sample})
    assert receipt["status"] == "delivered" and receipt["stamp"] == 1.0
    assert [f["object"] for f in iv["payload"]["candidates"]] == ["std_10", "std_20"]  # standards only
    assert iv["payload"]["candidates"][0]["position"] == [0.4, 0.1, 0.02]
    assert iv["payload"]["candidates"][0]["axis"] == pytest.approx([0, 0, 1])
    # A reset (sim time back to 0) drops the old episode's frames: nothing stale is ever supplied.
    svc.on_world(0.0, {"std_10": std(0.9)})
    assert svc.on_opportunity_legal_set("ep2", 1, 1, (add("std_10"),), {}, t=1.0) == []


def test_joint_support_interaction_contrast():
    from labference_ros.oracle.gains import interactions
    table = {"base": {"mean_completed": 0.0, "mean_choice_correct": 0.0},
             "replace:decision": {"mean_completed": 0.5, "mean_choice_correct": 1.0},
             "replace:skill": {"mean_completed": 0.5, "mean_choice_correct": 0.0},
             "replace:decision+replace:skill": {"mean_completed": 1.0, "mean_choice_correct": 1.0}}
    out = interactions(table)
    assert out == {"replace:decision+replace:skill": {"choice_correct": 0.0, "completed": 0.0}}
    table["replace:decision+replace:skill"]["mean_completed"] = 0.75
    assert interactions(table)["replace:decision+replace:skill"]["completed"] == pytest.approx(-0.25)


def test_a_bridge_started_by_hand_with_an_incompatible_support_records_it_and_never_awaits_it():
    """The launcher refuses this condition; nodes started without it keep the status in run.json."""
    from labference_ros.oracle.handoff import SupportHandoff

    handoff = SupportHandoff("replace:state+assist:geometry", make("fixed_preference"))
    assert handoff.awaited == ()
    assert handoff.profile()["compatibility"] == {"assist:geometry": "incompatible:action_only",
                                                  "replace:state": "incompatible:action_only"}
    assert SupportHandoff("replace:state", make("misreader")).awaited == (Support("replace", "state"),)
