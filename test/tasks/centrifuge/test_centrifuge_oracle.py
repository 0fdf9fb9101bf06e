"""The centrifuge's controlled destination test as Oracle checkpoint pairs (paper 4.1, 6):
the history says tube_a was inserted into slot j; in one member it settled there, in the
other it went into the next slot. A plan follower chooses wrong exactly where the tube
settled elsewhere and right where it settled as intended; the scripted expert is right
in both; replacing the plan follower's state (the occupancy the rotor shows) or its
decision fixes it. Every branch runs the graph's episode loop in one process
(oracle.continuation.run_branch)."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("MUJOCO_GL", "egl")

from labference_ros.core.operations import insert  # noqa: E402
from labference_ros.oracle.checkpoints import CheckpointSpec, prepare, read_population, write_population  # noqa: E402
from labference_ros.oracle.continuation import run_branch  # noqa: E402
from labference_ros.oracle.supports import parse_condition  # noqa: E402
from labference_ros.tasks import family  # noqa: E402
from labference_ros.tasks.centrifuge.instances import settled_start_pairs  # noqa: E402
from labference_ros.tasks.centrifuge.rotor import opposite, slot_index, slot_name  # noqa: E402

FAMILY = family("centrifuge_loading")


def test_a_start_is_scored_from_the_occupancy_its_operations_leave():
    inst = FAMILY.generate("extended", 1, 2, 2, 2)[0]
    meant, slipped = insert("tube_a", "slot_04"), insert("tube_a", "slot_05")
    assert FAMILY.start_state(inst, (meant,)) == {"seated": {"tube_a": "slot_04"}}
    assert FAMILY.start_state(inst, (slipped,)) == {"seated": {"tube_a": "slot_05"}}
    handoff = FAMILY.handoff_instance(inst, {"seated": {"tube_a": "slot_05"}})
    assert (handoff.condition, handoff.seated) == ("basic", {"tube_a": 5})
    legal = FAMILY.make_referee(FAMILY.contract_for("basic"), handoff, episode_id="e", session_id="").scores()
    assert legal["seated"] == {"tube_a": "slot_05"}
    with pytest.raises(ValueError, match="nothing to choose"):
        FAMILY.handoff_instance(inst, {"seated": {"tube_a": "slot_05", "tube_b": "slot_11"}})


def test_a_population_file_keeps_the_family_and_what_was_executed(tmp_path):
    specs = [CheckpointSpec(cid, inst, prefix, executed=executed)
             for cid, inst, prefix, executed in settled_start_pairs(2, 5, 5, 0)]
    write_population(tmp_path / "pop.jsonl", specs)
    back = read_population(tmp_path / "pop.jsonl")
    assert back == specs and back[0].family.name == "centrifuge_loading"
    for a, b in zip(back[::2], back[1::2]):
        (meant,), (done,) = a.prefix, b.executed
        assert a.prefix == b.prefix and a.executed is None and a.instance == b.instance
        assert slot_index(done.destination) == (slot_index(meant.destination) + 1) % 12


@pytest.fixture(scope="module")
def verified_pairs():
    """Two controlled destination pairs, prepared: tube_a physically inserted by the
    reference planner into the slot each member says."""
    checkpoints = [prepare(CheckpointSpec(cid, inst, prefix, executed=executed))
                   for cid, inst, prefix, executed in settled_start_pairs(2, 4, 4, 0)]
    return checkpoints


@pytest.mark.slow
def test_every_start_is_verified_with_tube_a_where_the_robot_put_it(verified_pairs):
    for cp in verified_pairs:
        assert cp.verified, (cp.spec.checkpoint_id, cp.reason, cp.verification)
        assert cp.state == {"seated": {"tube_a": cp.spec.operations[0].destination}}
        assert cp.prefix_record[0]["operation"] == cp.spec.prefix[0].to_dict()  # the history a system is handed


@pytest.mark.slow
def test_the_plan_follower_is_wrong_exactly_where_the_tube_settled_elsewhere(verified_pairs):
    for cp in verified_pairs:
        (settled,) = cp.state["seated"].values()
        right = {"type": "insert", "object": "tube_b", "destination": slot_name(opposite(slot_index(settled), 12))}
        elsewhere = cp.spec.checkpoint_id.endswith(":settled_elsewhere")
        follower = run_branch(cp, "plan_follower")
        expert = run_branch(cp, "scripted_expert")
        assert follower.resolved and expert.resolved, (follower.reason, expert.reason)
        # The reference sets of the two members are disjoint: one legal destination each.
        assert follower.legal_set == [right], cp.spec.checkpoint_id
        assert expert.choice == right and expert.choice_correct and expert.completed
        assert follower.choice_correct is (not elsewhere), (cp.spec.checkpoint_id, follower.choice)
        if elsewhere:
            meant = cp.spec.prefix[0].destination
            assert follower.choice["destination"] == slot_name(opposite(slot_index(meant), 12))


@pytest.mark.slow
def test_the_rotors_occupancy_or_the_legal_decision_fixes_the_plan_follower(verified_pairs):
    elsewhere = [cp for cp in verified_pairs if cp.spec.checkpoint_id.endswith(":settled_elsewhere")]
    for condition in ("replace:state", "replace:decision"):
        for cp in elsewhere:
            branch = run_branch(cp, "plan_follower", parse_condition(condition))
            assert branch.resolved and branch.choice_correct and branch.completed, (condition, branch.choice)
            delivered = [r for r in branch.receipts if r["status"] == "delivered"]
            assert delivered and delivered[0]["site"] == condition.split(":")[1]
            if condition == "replace:state":
                assert delivered[0]["payload"] == {"occupied_slots": list(cp.state["seated"].values())}
