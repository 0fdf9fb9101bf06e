"""Matched continuations on MujocoBackend with the diagnostic reference
systems (issue 6 acceptance). basic-1-0000..0003 require std_10, std_20,
std_50, std_100; samples 150, 160, 150, 60 g."""
import json
import os
import subprocess
import sys

import pytest

from labference_ros.oracle import continuation
from labference_ros.tasks import family as task_family
from labference_ros.oracle.checkpoints import population_from_instances, prepare
from labference_ros.oracle.continuation import run_branch
from labference_ros.oracle.diagnose import diagnose_oracle, format_table
from labference_ros.oracle.supports import parse_condition
from labference_ros.tasks.weighing.instances import generate

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")
INSTANCES = generate("basic", 4, task_seed=1, layout_seed=100, policy_seed=0)


@pytest.fixture(scope="module")
def misreader_records(tmp_path_factory):
    return tmp_path_factory.mktemp("branch_records")


@pytest.fixture(scope="module")
def misreader(misreader_records):
    # 150 g reads as 160 g: it stops at once instead of adding.
    specs = population_from_instances([INSTANCES[0], INSTANCES[2]])
    return diagnose_oracle(None, "misreader", ["replace:state", "assist:state", "replace:decision",
                                               "replace:skill"], specs=specs, records_dir=misreader_records)


@pytest.fixture(scope="module")
def unsteady():
    # std_100 slips out of its grasp; std_50 survives.
    specs = population_from_instances([INSTANCES[3], INSTANCES[2]])
    return diagnose_oracle(None, "unsteady_grasp", ["replace:skill", "replace:state"], specs=specs)


def test_misreader_state_and_decision_support_fix_its_choice(misreader):
    print(format_table(misreader))
    t = misreader["table"]
    assert all(p["status"] == "verified" for p in misreader["population"])
    assert t["base"]["mean_choice_correct"] == 0.0
    for cond in ("replace:state", "assist:state", "replace:decision"):
        assert t[cond]["gain_choice_correct"] > 0, cond
        assert t[cond]["delivery_rate"] == 1.0
    assert t["replace:decision"]["agreement_rate"] == 1.0
    # The original (misread) report is kept next to the substituted one.
    r = misreader["branches"]["replace:state"][0].receipts[0]
    assert r["original_output"]["displayed_g"] != r["substituted_output"]["displayed_g"]
    assert r["payload_id"] and r["first_subsequent_choice"]["type"] == "add"
    # Both checkpoints are in J (evidence delivered, a physical operation legal): B_next over
    # J is the misreader's 0 of 2, and 2 of 2 with its display read for it.
    pops = misreader["populations"]
    assert sorted(pops["J"]) == sorted(p["checkpoint_id"] for p in misreader["population"])
    assert pops["conditions"]["base"]["B_next"]["rate"] == 0.0
    assert pops["conditions"]["replace:state"]["B_next"]["rate"] == 1.0
    assert pops["gains"]["replace:state"]["metrics"]["choice_correct"]["gain"] == 1.0


def test_branch_records_are_runs_the_report_reads_as_separate_cells(misreader, misreader_records):
    # Every branch wrote run.json, its referee's records and the scores it was given.
    for name, branches in misreader["branches"].items():
        for b in branches:
            episode = (misreader_records / "misreader" / name.replace(":", "_") / "episodes"
                       / b.checkpoint_id.replace(":", "_"))
            run = json.loads((episode / "run.json").read_text())
            assert run["intervention"]["protocol"] == "checkpoint_continuation"
            assert run["checkpoint"]["checkpoint_id"] == b.checkpoint_id
            scores = json.loads((episode / "scores.json").read_text())
            assert {k: v for k, v in scores.items() if k not in ("records_schema", "status")} == b.scores
            assert (episode / "events.jsonl").read_text().count('"record":"opportunity"') == scores["opportunities"]
    proc = subprocess.run([LABFERENCE, "report", str(misreader_records), "--no-plots"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    cells = {(c["cell"]["intervention_mode"], c["cell"]["intervention_site"]): c
             for c in json.loads((misreader_records / "report.json").read_text())["cells"]}
    assert set(cells) == {("none", None), ("replace", "state"), ("assist", "state"), ("replace", "decision"),
                          ("replace", "skill")}
    assert all(c["cell"]["intervention_protocol"] == "checkpoint_continuation" for c in cells.values())
    # The native first decision: the misreader never adds; with its display read for it, it does.
    assert cells[("none", None)]["metrics"]["choice"]["first_decision"]["B_next"] == 0.0
    assert cells[("replace", "state")]["metrics"]["choice"]["first_decision"]["B_next"] == 1.0


def test_misreader_skill_support_does_not_fix_its_choice(misreader):
    t = misreader["table"]["replace:skill"]
    assert t["gain_choice_correct"] == 0 and t["choice_correct_supported"] == 0
    assert t["gain_completed"] == 0


@pytest.fixture(scope="module")
def mislocator():
    # Its calibration puts every standard 3.5 cm wide of where it stands.
    specs = population_from_instances([INSTANCES[1], INSTANCES[2]])
    return diagnose_oracle(None, "mislocator", ["replace:geometry", "assist:geometry", "replace:state"],
                           specs=specs)


def test_mislocator_geometry_support_raises_completion_and_its_error_is_measured(mislocator):
    print(format_table(mislocator))
    t = mislocator["table"]
    assert t["base"]["mean_choice_correct"] == 1.0 and t["base"]["mean_completed"] == 0.0
    for cond in ("replace:geometry", "assist:geometry"):
        assert t[cond]["gain_completed"] > 0 and t[cond]["delivery_rate"] == 1.0, cond
    assert t["replace:state"]["gain_completed"] == 0  # the reading was never its problem
    errs = t["base"]["interface_errors"]
    assert errs["geometry_reports"] == 2 and errs["geometry_invalid"] == 0
    assert errs["geometry_e_p_m_mean"] == pytest.approx(0.035, abs=0.005)
    assert errs["geometry_e_v_rad_mean"] < 0.01
    # Replace keeps the system's own frame beside the reference one it substituted.
    r = mislocator["branches"]["replace:geometry"][0].receipts[0]
    assert r["site"] == "geometry" and r["original_output"]["object"] == r["substituted_output"]["object"]
    assert r["original_output"]["position"] != r["substituted_output"]["position"]


def test_unsteady_grasp_skill_replacement_raises_completion(unsteady):
    print(format_table(unsteady))
    t = unsteady["table"]
    assert t["base"]["mean_choice_correct"] == 1.0  # it selects correctly
    assert t["base"]["mean_completed"] < 1.0  # but drops the heavy standard
    assert t["replace:skill"]["gain_completed"] > 0
    attempts = [a for b in unsteady["branches"]["replace:skill"] for a in b.executor_attempts]
    assert attempts and all(a["status"] == "attempted" for a in attempts)
    assert all(a["outcome"] == "confirmed" for a in attempts), attempts  # the executor's own record
    assert t["replace:state"]["gain_choice_correct"] == 0
    assert t["replace:state"]["gain_completed"] == 0


def test_fixed_subgoal_start_measures_execution_over_k():
    # basic-1-0003 requires std_100, which slips from the unsteady grasp. At a start
    # registered for K every branch is given the operation and the reference geometry:
    # the base branch still drops it, the reference executor seats it.
    specs = population_from_instances([INSTANCES[3]], fixed_subgoal=True)
    result = diagnose_oracle(None, "unsteady_grasp", ["replace:skill"], specs=specs)
    print(format_table(result))
    (base,) = result["branches"]["base"]
    assert base.subgoal_supplied is True and base.subgoal_confirmed is False
    assert base.choice == {"type": "add", "object": "std_100", "destination": "pan"}
    delivered = {r["site"] for r in base.receipts if r["status"] == "delivered"}
    assert {"decision", "geometry"} <= delivered
    pops = result["populations"]
    assert pops["J"] == [] and pops["K"] == [specs[0].checkpoint_id]  # a supplied choice is never in J
    assert pops["conditions"]["base"]["E_fixed"]["rate"] == 0.0
    assert pops["conditions"]["replace:skill"]["E_fixed"]["rate"] == 1.0
    assert pops["gains"]["replace:skill"]["metrics"]["subgoal_confirmed"]["gain"] == 1.0


@pytest.fixture(scope="module")
def checkpoint():
    cp = prepare(population_from_instances([INSTANCES[0]])[0])
    assert cp.verified, cp.reason
    return cp


def test_branches_are_bit_identical_until_the_first_delivered_support(checkpoint):
    base = run_branch(checkpoint, "misreader", (), trace=True)
    sup = run_branch(checkpoint, "misreader", parse_condition("replace:state"), trace=True)
    assert base.trace[0] == sup.trace[0] == checkpoint.snapshot.sha256
    k = sup.first_delivery_step
    assert k is not None and k >= 1
    assert base.trace[:k] == sup.trace[:k]
    n = min(len(base.trace), len(sup.trace))
    assert base.trace[:n] != sup.trace[:n]  # the support did change the continuation


def test_a_refused_support_leaves_the_branch_identical_to_base(checkpoint, monkeypatch):
    """A leaking payload is refused by the scope validator, never delivered,
    so the supported branch is the base branch step by step."""
    leak = lambda world: {"displayed_g": world.reading.displayed_g, "stable": True,  # noqa: E731
                          "sample_mass_g": 150.0}
    monkeypatch.setattr(task_family("feedback_weighing"), "state_payload", leak)
    base = run_branch(checkpoint, "misreader", (), trace=True)
    sup = run_branch(checkpoint, "misreader", parse_condition("replace:state"), trace=True)
    assert sup.receipts and all(r["status"] == "rejected_scope" for r in sup.receipts)
    assert any(x.startswith("hidden_fields") for x in sup.receipts[0]["reasons"])
    assert sup.first_delivery_step is None
    assert sup.trace == base.trace and len(base.trace) > 10
    assert (sup.choice, sup.completed) == (base.choice, base.completed)


def test_misreader_state_interface_error_is_measured_at_the_checkpoint(misreader):
    # 150 g displayed, 160 g reported: a field-level readout error of 10 g.
    errs = [b.readout_abs_error_g for b in misreader["branches"]["base"]]
    assert errs == [10.0, 10.0]


def test_prefix_checkpoint_is_rebuilt_and_verified_at_the_handoff():
    from labference_ros.core.operations import add
    spec = population_from_instances([INSTANCES[0]], prefix=(add("std_20"),))[0]
    a, b = prepare(spec), prepare(spec)
    assert a.verified, a.reason
    assert a.state == {"on_pan": ["std_20"]} and a.verification["stable"] and not a.verification["held"]
    assert a.snapshot.blob == b.snapshot.blob  # rebuilding is deterministic, bit for bit
    # The authorized prefix: what a system would have been delivered, and what was done.
    (step,) = a.prefix_record
    assert step["operation"] == add("std_20").to_dict() and step["t"] == 0.0
    assert set(step["observation"].images) >= {"front", "display"}
    assert "instance" not in vars(step["observation"]) and "positions" not in vars(step["observation"])


def test_every_branch_hands_the_prefix_to_its_reset_system(monkeypatch):
    """fixed_preference moves its preferred standard once. From a checkpoint whose
    prefix already moved it, a system that got the prefix knows; one that did not
    picks the same standard up again."""
    from labference_ros.core.operations import add
    from labference_ros.core.system import TestedSystem
    cp = prepare(population_from_instances([INSTANCES[0]], prefix=(add("std_20"),))[0])
    params = {"preference": "std_20"}
    informed = run_branch(cp, "fixed_preference", (), params=params, budget_s=8.0)
    monkeypatch.setattr(TestedSystem, "receive_prefix", lambda self, prefix: None)
    monkeypatch.delattr("labference_ros.tasks.weighing.systems.scripted.PickPlaceSystem.receive_prefix")
    amnesiac = run_branch(cp, "fixed_preference", (), params=params, budget_s=8.0)
    assert informed.status == amnesiac.status == "ok"
    assert informed.choice is None  # nothing left to do: it already moved std_20
    assert amnesiac.choice is not None and amnesiac.choice["object"] == "std_20"


def test_branches_run_inside_the_safety_envelope_when_asked(checkpoint, monkeypatch, tmp_path):
    """safety="franka": the scripted expert still completes inside the Panda's envelope, and
    its run.json says so (a report cell of its own); an envelope that refuses every chunk
    leaves the arm holding, so nothing is chosen."""
    from labference_ros.reporting.identity import identity

    inside = run_branch(checkpoint, "scripted_expert", (), safety="franka", records_dir=tmp_path)
    assert inside.status == "ok" and inside.completed is True
    (run_json,) = tmp_path.glob("*/*/episodes/*/run.json")
    run = json.loads(run_json.read_text())
    assert run["policy"]["safety"] == "franka" and identity(run)["safety"] == "franka"
    assert identity({**run, "policy": {k: v for k, v in run["policy"].items() if k != "safety"}})["safety"] is None
    refused = []

    def refuse_all(arm, start, velocity, interval):
        refused.append(len(arm))
        return ["test envelope refuses every chunk"]

    real_check = continuation.safety_check
    monkeypatch.setattr(continuation, "safety_check", lambda mode: refuse_all if mode == "franka" else real_check(mode))
    held = run_branch(checkpoint, "scripted_expert", (), safety="franka", budget_s=10.0)
    assert refused, "the branch never asked the envelope"
    assert held.choice is None and held.completed is False
    unchecked = run_branch(checkpoint, "scripted_expert", (), budget_s=10.0)
    assert unchecked.choice is not None  # the same 10 s without the envelope do choose
    with pytest.raises(ValueError, match="safety must be one of none, franka"):
        run_branch(checkpoint, "scripted_expert", (), safety="ur5")
