"""Placement recall's held-out binding (heldout_tubes): basic-same's instances from the
same seeds with the held-out tubes (slimmer, longer, amber), every seating, approach and
terminal rule unchanged; the instance records its binding, the scene holds the bound
tubes and the scripted expert carries them by their own length."""
from __future__ import annotations

import json

import numpy as np
import pytest

from labference_ros.cell.description import placement_cell
from labference_ros.core.certificates import instance_sha256
from labference_ros.tasks import family
from labference_ros.tasks.placement_recall.contract import HELDOUT_TUBE, contract_for
from labference_ros.tasks.placement_recall.instances import PlacementInstance
from labference_ros.tasks.placement_recall.scene import build_spec

TWIN_FIELDS = ("instance_id", "condition", "binding", "binding_twin")
TUBES = ("tube_target", "tube_d1", "tube_d2", "tube_d3")
FAMILY = family("placement_recall")


def _generate(condition: str, n: int = 1) -> list[PlacementInstance]:
    return FAMILY.generate(condition, n, 2, 3, 4)


def test_the_heldout_condition_is_basic_same_with_other_tubes():
    basic, heldout = contract_for("basic-same").to_dict(), contract_for("heldout_tubes").to_dict()
    assert (heldout["binding"], heldout["rebinds"]) == ("slim_tubes", "basic-same")
    changed = ("condition", "binding", "rebinds", "tube", "guide_handoff")
    assert {k: v for k, v in heldout.items() if k not in changed} == \
        {k: v for k, v in basic.items() if k not in changed}
    # The guides' clearance is the bound tube's; the handoff's tilt bound is basic's.
    assert heldout["guide_handoff"] == {"lateral_m": 0.005, "max_tilt_deg": basic["guide_handoff"]["max_tilt_deg"]}
    assert "binding" not in basic and "heldout_tubes" in FAMILY.conditions
    assert FAMILY.accepts_condition("heldout_tubes") and not FAMILY.accepts_condition("heldout_blocks")
    with pytest.raises(ValueError, match="condition heldout_tubes names its caps itself"):
        contract_for("heldout_tubes", "distinct")
    # The contract's tube is the cell description's held-out tubes, each a new shape.
    for name in TUBES:
        shape = placement_cell().bound("slim_tubes").objects[name]
        assert (shape.radius, shape.height) == (HELDOUT_TUBE.radius_m, HELDOUT_TUBE.length_m)
        default = placement_cell().objects[name]
        assert (shape.radius, shape.height) != (default.radius, default.height)


def test_heldout_instances_are_basic_sames_twins_and_record_their_binding():
    basics, heldouts = _generate("basic-same", 5), _generate("heldout_tubes", 5)
    for b, h in zip(basics, heldouts, strict=True):
        assert (h.condition, h.binding, h.binding_twin) == ("heldout_tubes", "slim_tubes", b.instance_id)
        assert h.instance_id == "heldout_tubes" + b.instance_id[len("basic-same"):]
        assert {k: v for k, v in h.__dict__.items() if k not in TWIN_FIELDS} == \
            {k: v for k, v in b.__dict__.items() if k not in TWIN_FIELDS}
        assert h.setting == "basic" and h.caps == "same"
        record = json.loads(h.to_json())
        assert PlacementInstance.from_json(h.to_json()) == h
        assert instance_sha256(record) != instance_sha256({k: v for k, v in record.items()
                                                           if k not in ("binding", "binding_twin")})
        assert not {"binding", "binding_twin"} & set(json.loads(b.to_json()))


def test_the_checkpoints_do_not_offer_the_heldout_condition():
    with pytest.raises(ValueError, match="checkpoints do not offer the held-out binding condition heldout_tubes"):
        FAMILY.checkpoint_starts("heldout_tubes", 1, 0)


def test_the_scene_holds_the_heldout_tubes():
    (basic,), (heldout,) = _generate("basic-same"), _generate("heldout_tubes")
    m_basic, m_held = build_spec(basic).compile(), build_spec(heldout).compile()
    amber = list(placement_cell().bound("slim_tubes").objects["tube_target"].rgba)
    assert list(m_held.geom("tube_target").size[:2]) == pytest.approx([HELDOUT_TUBE.radius_m,
                                                                       HELDOUT_TUBE.length_m / 2])
    assert list(m_basic.geom("tube_target").size[:2]) == pytest.approx([0.0075, 0.040])
    assert list(m_held.geom("tube_target").rgba) == pytest.approx(amber)
    assert list(m_held.geom("tube_target_cap").rgba) == pytest.approx(list(m_basic.geom("tube_target_cap").rgba))
    # Standing upright on the table: its centre half its own length above the table.
    lift = m_held.body("tube_target").pos[2] - m_basic.body("tube_target").pos[2]
    assert lift == pytest.approx((HELDOUT_TUBE.length_m - 0.080) / 2)


def _placement_plan(system, instance):
    """The system's placement move for `instance` at the start (the target on the table,
    the rack empty), planned from the home pose."""
    from types import SimpleNamespace

    from labference_ros.core.system import EvaluatorView
    from labference_ros.tasks.placement_recall.scene import standing_position

    cell = placement_cell().bound(instance.binding)
    pose = instance.rack_pose
    view = EvaluatorView(instance=instance, t=0.0,
                         positions={"tube_target": standing_position("tube_target", instance.target_start, cell)},
                         facts={"rack_pose": [*pose.center, pose.yaw_rad], "in_holes": {}})
    system.reset("s", 0)
    obs = SimpleNamespace(sim_time=0.0, joint_positions=np.asarray(cell.robot.home, float))
    return system.plan_move(obs, system.decide(obs, view))


def test_the_expert_carries_the_tube_it_holds():
    from labference_ros.tasks.placement_recall.systems import LabelMemory, ScriptedExpert

    (basic,), (heldout,) = _generate("basic-same"), _generate("heldout_tubes")
    widths = {name: {round(e.width, 4) for e in _placement_plan(ScriptedExpert(), inst).gripper_events}
              for name, inst in (("basic", basic), ("heldout", heldout))}
    # The grasp closes on the tube's own diameter (the privileged systems read the binding).
    assert 2 * HELDOUT_TUBE.radius_m in widths["heldout"] and 0.015 not in widths["heldout"]
    assert 0.015 in widths["basic"]
    label_memory = _placement_plan(LabelMemory(), heldout)
    assert 2 * HELDOUT_TUBE.radius_m in {round(e.width, 4) for e in label_memory.gripper_events}


def test_a_referee_refuses_an_instance_of_another_binding():
    from labference_ros.tasks.placement_recall.referee import Referee

    (basic,), (heldout,) = _generate("basic-same"), _generate("heldout_tubes")
    with pytest.raises(ValueError, match="binds 'the default objects', condition heldout_tubes binds 'slim_tubes'"):
        Referee(contract_for("heldout_tubes"), basic)
    with pytest.raises(ValueError, match="binds 'slim_tubes', condition basic-same binds 'the default objects'"):
        Referee(contract_for("basic-same"), heldout)
    Referee(contract_for("heldout_tubes"), heldout)  # its own condition's instance it takes


@pytest.mark.slow
def test_the_reference_program_certifies_heldout_instances(tmp_path):
    from labference_ros.campaign.certify import certify_instance

    for inst in FAMILY.generate("heldout_tubes", 2, 0, 0, 0):
        cert = certify_instance(FAMILY, inst, frames_dir=tmp_path / inst.instance_id)
        assert cert["verdict"] == "certified", cert["reason"]
        assert [s["name"] for s in cert["steps"]] == list(FAMILY.contract_for("heldout_tubes").evaluation_steps)
