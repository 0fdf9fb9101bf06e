"""Matched Oracle continuations of placement recall (paper 6.4) from its balanced
checkpoint population: world_position remembers the world position where it let the
tube go, which is wrong once the rack has turned half a turn while the cameras were
blocked. From the same verified starts (the target placed in A2 with the rack then
turned, and in B4 with the rack left where it stood), State support (where the target
stands now, in the rack's labels) and Decision support (Pick from that hole) each fix
its retrieval where the rack turned and change nothing where it stayed. Every branch
runs the graph's episode loop in one process (oracle.continuation.run_branch)."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("MUJOCO_GL", "egl")

from labference_ros.core.operations import insert  # noqa: E402
from labference_ros.oracle.checkpoints import CheckpointSpec  # noqa: E402
from labference_ros.oracle.diagnose import diagnose_oracle, format_table  # noqa: E402
from labference_ros.tasks.placement_recall.instances import TARGET, checkpoint_starts  # noqa: E402

TURNED, STILL = ("rotate_180", "A2"), ("none", "B4")


@pytest.fixture(scope="module")
def world_position():
    starts = {(inst.movement, hole): (inst, hole) for inst, hole in checkpoint_starts("extended", "same", 0, 0)}
    specs = [CheckpointSpec(f"{inst.instance_id}:p1", inst, (insert(TARGET, hole),))
             for inst, hole in (starts[TURNED], starts[STILL])]
    return diagnose_oracle(None, "world_position", ["replace:state", "replace:decision"], specs=specs)


@pytest.mark.slow
def test_state_support_fixes_world_positions_retrieval_where_the_rack_turned(world_position):
    result = world_position
    print(format_table(result))
    assert [p["status"] for p in result["population"]] == ["verified", "verified"]
    base = result["branches"]["base"]
    turned, still = base
    # Base: wrong exactly where the rack turned (it reaches where the hole was).
    assert turned.choice_correct is False and turned.completed is False
    assert turned.scores["retrieval"]["chosen_hole"] == turned.scores["retrieval"]["old_world_position_hole"]
    assert still.choice_correct is True and still.completed is True
    for condition in ("replace:state", "replace:decision"):
        row = result["table"][condition]
        assert row["compatibility"] == "compatible"
        assert row["gain_choice_correct"] == pytest.approx(0.5), condition  # one of two starts fixed
        assert row["gain_completed"] == pytest.approx(0.5), condition
        s_turned, s_still = result["branches"][condition]
        assert s_turned.choice_correct and s_turned.completed, (condition, s_turned.choice, s_turned.reason)
        assert s_turned.choice == {"type": "pick", "object": TARGET, "destination": TURNED[1]}
        assert s_still.choice_correct and s_still.completed, (condition, s_still.choice)
        site = condition.split(":")[1]
        delivered = [r for r in s_turned.receipts if r["status"] == "delivered"]
        assert delivered and all(r["site"] == site for r in delivered) and row["delivery_rate"] == 1.0
        # The support delivered at the retrieval's opportunity, followed by its Pick (the one
        # delivered before the occlusion is followed by the Wait it held then).
        r = next(r for r in delivered if (r["first_subsequent_choice"] or {}).get("type") == "pick")
        if site == "state":
            assert r["payload"] == {"target_hole": TURNED[1], "occupied_holes": r["payload"]["occupied_holes"]}
            assert TURNED[1] in r["payload"]["occupied_holes"]
            # Its own state, kept beside the substituted one: the hole now at its remembered place.
            assert r["original_output"]["target_hole"] not in (None, TURNED[1])
        else:
            assert r["payload"]["operation"] == {"type": "pick", "object": TARGET, "destination": TURNED[1]}
            assert r["agreement"] is True
    # The still start's branches are the base branch, choice for choice.
    for condition in ("replace:state", "replace:decision"):
        assert result["branches"][condition][1].choice == still.choice
