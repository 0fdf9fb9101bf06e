"""Weighing's held-out binding (heldout_blocks): basic's instances, same draws and the same
success specification, with the standards bound to the cell description's square blocks;
the instance records its binding (and its basic twin), the scene holds the blocks and
the scripted expert grasps them by their own geometry."""
from __future__ import annotations

import json

import mujoco
import pytest
import yaml

from labference_ros.cell.description import CELL_DIR, parse_cell, weighing_cell
from labference_ros.core.certificates import instance_sha256
from labference_ros.tasks import family
from labference_ros.tasks.weighing.contract import HELDOUT_BINDING, contract_for
from labference_ros.tasks.weighing.instance import WeighingInstance
from labference_ros.tasks.weighing.instances import generate, generate_pairs
from labference_ros.tasks.weighing.objects import STANDARDS
from labference_ros.tasks.weighing.scene import build_weighing_spec

TWIN_FIELDS = ("instance_id", "condition", "binding", "binding_twin")


def test_the_heldout_condition_is_basic_with_another_binding():
    basic, heldout = contract_for("basic").to_dict(), contract_for("heldout_blocks").to_dict()
    assert (heldout["binding"], heldout["rebinds"]) == (HELDOUT_BINDING, "basic") == ("blocks", "basic")
    # The success specification is unchanged: every field but the condition and the binding.
    assert {k: v for k, v in heldout.items() if k not in ("condition", "binding", "rebinds")} == \
        {k: v for k, v in basic.items() if k != "condition"}
    # The default conditions keep their record and hash (no binding key).
    assert "binding" not in basic and "rebinds" not in basic
    assert "heldout_blocks" in family("feedback_weighing").conditions


def test_heldout_instances_are_basics_twins_and_record_their_binding():
    basic, heldout = generate("basic", 6, 3, 4, 5), generate("heldout_blocks", 6, 3, 4, 5)
    for b, h in zip(basic, heldout):
        assert (h.condition, h.binding, h.binding_twin) == ("heldout_blocks", "blocks", b.instance_id)
        assert h.instance_id == b.instance_id.replace("basic", "heldout_blocks", 1)
        assert {k: v for k, v in h.__dict__.items() if k not in TWIN_FIELDS} == \
            {k: v for k, v in b.__dict__.items() if k not in TWIN_FIELDS}
        record = json.loads(h.to_json())
        assert (record["binding"], record["binding_twin"]) == ("blocks", b.instance_id)
        assert WeighingInstance.from_json(h.to_json()) == h
        # The binding enters the instance's hash (what certificates and locks name).
        unbound = {k: v for k, v in record.items() if k not in ("binding", "binding_twin")}
        assert instance_sha256(record) != instance_sha256(unbound)
        # The default binding's record is as before: no binding keys.
        assert not {"binding", "binding_twin"} & set(json.loads(b.to_json()))
    # Pairs too: both members rebound, the pair id renamed.
    (a, b), = generate_pairs("heldout_blocks", 1, 0, 0, 0)
    (ta, tb), = generate_pairs("basic", 1, 0, 0, 0)
    assert a.pair_id == b.pair_id == ta.pair_id.replace("basic", "heldout_blocks", 1)
    assert (a.binding_twin, b.binding_twin) == (ta.instance_id, tb.instance_id) and a.binding == "blocks"


def _geom(model, name):
    return model.geom(f"{name}_geom")


def test_the_scene_holds_the_bound_standards():
    (basic,), (heldout,) = generate("basic", 1, 0, 0, 0), generate("heldout_blocks", 1, 0, 0, 0)
    default, blocks = weighing_cell(), weighing_cell().bound("blocks")
    m_basic = build_weighing_spec(basic).compile()
    m_held = build_weighing_spec(heldout).compile()
    for name in STANDARDS:
        shape = blocks.objects[name]
        assert shape.kind == "block" and shape.label_rgb == default.objects[name].label_rgb
        assert shape.marker_id == default.objects[name].marker_id
        g = _geom(m_held, name)
        assert g.type[0] == mujoco.mjtGeom.mjGEOM_BOX
        assert list(g.size) == pytest.approx([shape.radius, shape.radius, shape.height / 2])
        assert _geom(m_basic, name).type[0] == mujoco.mjtGeom.mjGEOM_CYLINDER
        # Same mass, another geometry.
        assert m_held.body(name).mass[0] == pytest.approx(m_basic.body(name).mass[0])
        assert (shape.radius, shape.height) != (default.objects[name].radius, default.objects[name].height)
    # The sample keeps its shape.
    assert _geom(m_held, "sample").type[0] == mujoco.mjtGeom.mjGEOM_CYLINDER


def test_the_expert_grasps_a_block_by_its_own_width_and_height():
    from labference_ros.skills.motion import PickPlacePlanner
    from labference_ros.tasks.weighing.moves import plan_to_pan

    (inst,) = generate("heldout_blocks", 1, 0, 0, 0)
    planner = PickPlacePlanner()
    q = weighing_cell().robot.home
    xyz = (*inst.layout["std_10"], 0.013)
    held = plan_to_pan(planner, q, "std_10", xyz, inst.layout["balance"], inst.binding)
    default = plan_to_pan(planner, q, "std_10", xyz, inst.layout["balance"])
    widths = lambda plan: sorted({round(e.width, 4) for e in plan.gripper_events})  # noqa: E731
    block, cylinder = weighing_cell().bound("blocks").objects["std_10"], weighing_cell().objects["std_10"]
    assert 2 * block.radius in widths(held) and 2 * cylinder.radius not in widths(held)
    assert 2 * cylinder.radius in widths(default)
    # The family's own planning (checkpoint prefixes) takes the instance's binding.
    from labference_ros.core.operations import add
    from labference_ros.core.measurements import ObjectMeasurement, WorldMeasurement

    world = WorldMeasurement(t=0.0, objects={"std_10": ObjectMeasurement(
        name="std_10", kind="standard", position=xyz, orientation=(1.0, 0.0, 0.0, 0.0), linear_speed=0.0,
        angular_speed=0.0)}, gripper_width=0.08, gripper_closing=False, pan_contacts=(), balance=None)
    fam_plan = family("feedback_weighing").plan_operation(planner, q, inst, world, add("std_10"))
    assert widths(fam_plan) == widths(held)


def test_an_unknown_binding_is_one_clear_error():
    (inst,) = generate("basic", 1, 0, 0, 0)
    bad = WeighingInstance(**{**inst.__dict__, "binding": "marble"})
    with pytest.raises(ValueError, match=r"no object binding 'marble' \(known: default, blocks\)"):
        build_weighing_spec(bad)
    data = yaml.safe_load((CELL_DIR / "weighing_cell.yaml").read_text())
    data["bindings"]["blocks"]["std_7"] = data["bindings"]["blocks"]["std_10"]
    with pytest.raises(ValueError, match=r"binding 'blocks' replaces objects the cell has not: \['std_7'\]"):
        parse_cell(data)
    data = yaml.safe_load((CELL_DIR / "weighing_cell.yaml").read_text())
    data["bindings"]["blocks"]["std_10"]["kind"] = "sphere"
    with pytest.raises(ValueError, match="unknown kind 'sphere'"):
        parse_cell(data)


def test_a_referee_refuses_an_instance_of_another_binding():
    from labference_ros.tasks.weighing.referee import Referee

    (basic,), (heldout,) = generate("basic", 1, 0, 0, 0), generate("heldout_blocks", 1, 0, 0, 0)
    with pytest.raises(ValueError, match="binds 'the default objects', condition heldout_blocks binds 'blocks'"):
        Referee(contract_for("heldout_blocks"), basic)
    with pytest.raises(ValueError, match="binds 'blocks', condition basic binds 'the default objects'"):
        Referee(contract_for("basic"), heldout)
    Referee(contract_for("heldout_blocks"), heldout)


@pytest.mark.slow
def test_the_reference_program_certifies_heldout_instances(tmp_path):
    """The scripted expert solves the held-out binding through the graph's episode loop:
    every ordered step, a clean end, key frames rendered (the scene draws the blocks)."""
    from labference_ros.campaign.certify import certify_instance

    fam = family("feedback_weighing")
    twins = fam.generate("basic", 2, 0, 0, 0)
    for inst, twin in zip(fam.generate("heldout_blocks", 2, 0, 0, 0), twins):
        cert = certify_instance(fam, inst, frames_dir=tmp_path / inst.instance_id)
        assert cert["verdict"] == "certified", cert["reason"]
        assert [s["name"] for s in cert["steps"]] == list(fam.contract_for("heldout_blocks").evaluation_steps)
        assert len(cert["frames"]) >= 3
        base = certify_instance(fam, twin, frames_dir=tmp_path / twin.instance_id)
        assert base["verdict"] == "certified" and base["scene_hash"] != cert["scene_hash"]
