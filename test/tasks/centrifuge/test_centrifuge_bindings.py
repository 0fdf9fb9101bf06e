"""Centrifuge loading's held-out binding (heldout_tubes): basic's instances from the same
seeds with the held-out tube pair (slimmer, longer, red caps), the insertion rules
unchanged; the instance records its binding, the scene holds the bound tubes and the
scripted expert inserts them by their own length."""
from __future__ import annotations

import json

import pytest

from labference_ros.cell.description import centrifuge_cell
from labference_ros.core.certificates import instance_sha256
from labference_ros.tasks import family
from labference_ros.tasks.centrifuge.contract import HELDOUT_BINDING, HELDOUT_TUBE, contract_for
from labference_ros.tasks.centrifuge.instances import CentrifugeInstance, generate
from labference_ros.tasks.centrifuge.scene import build_spec

TWIN_FIELDS = ("instance_id", "condition", "binding", "binding_twin")


def test_the_heldout_condition_is_basic_with_another_tube_pair():
    basic, heldout = contract_for("basic").to_dict(), contract_for("heldout_tubes").to_dict()
    assert (heldout["binding"], heldout["rebinds"]) == (HELDOUT_BINDING, "basic") == ("slim_tubes", "basic")
    assert {k: v for k, v in heldout.items() if k not in ("condition", "binding", "rebinds", "tube")} == \
        {k: v for k, v in basic.items() if k not in ("condition", "tube")}
    assert heldout["tube"]["mass_kg"] == basic["tube"]["mass_kg"]  # still an equal-mass pair of that mass
    assert "binding" not in basic and "heldout_tubes" in family("centrifuge_loading").conditions
    # The contract's tube is the cell description's held-out tubes.
    for name in ("tube_a", "tube_b"):
        shape = centrifuge_cell().bound(HELDOUT_BINDING).objects[name]
        assert (shape.radius, shape.height) == (HELDOUT_TUBE.radius_m, HELDOUT_TUBE.length_m)
        assert shape.label_rgb != centrifuge_cell().objects[name].label_rgb  # another cap


def test_heldout_instances_are_basics_twins_and_record_their_binding():
    for b, h in zip(generate("basic", 5, 2, 3, 4), generate("heldout_tubes", 5, 2, 3, 4)):
        assert (h.condition, h.binding, h.binding_twin) == ("heldout_tubes", "slim_tubes", b.instance_id)
        assert {k: v for k, v in h.__dict__.items() if k not in TWIN_FIELDS} == \
            {k: v for k, v in b.__dict__.items() if k not in TWIN_FIELDS}
        record = json.loads(h.to_json())
        assert CentrifugeInstance.from_json(h.to_json()) == h
        assert instance_sha256(record) != instance_sha256({k: v for k, v in record.items()
                                                           if k not in ("binding", "binding_twin")})
        assert not {"binding", "binding_twin"} & set(json.loads(b.to_json()))


def test_the_scene_holds_the_heldout_tubes_and_caps():
    (basic,), (heldout,) = generate("basic", 1, 0, 0, 0), generate("heldout_tubes", 1, 0, 0, 0)
    m_basic, m_held = build_spec(basic).compile(), build_spec(heldout).compile()
    red = [c / 255 for c in centrifuge_cell().bound("slim_tubes").objects["tube_b"].label_rgb]
    for name in ("tube_a", "tube_b"):
        assert list(m_held.geom(name).size[:2]) == pytest.approx([HELDOUT_TUBE.radius_m, HELDOUT_TUBE.length_m / 2])
        assert list(m_basic.geom(name).size[:2]) == pytest.approx([0.0075, 0.040])
        assert list(m_held.geom(f"{name}_cap").rgba[:3]) == pytest.approx(red)
        assert m_held.body(name).mass[0] == pytest.approx(m_basic.body(name).mass[0])


def test_the_expert_inserts_the_tube_it_holds():
    from labference_ros.skills.motion import PickPlacePlanner
    from labference_ros.tasks.centrifuge.moves import plan_insert

    (basic,), (heldout,) = generate("basic", 1, 0, 0, 0), generate("heldout_tubes", 1, 0, 0, 0)
    planner = PickPlacePlanner()
    q = centrifuge_cell().robot.home
    xy = heldout.stand["tube_b"]
    slot = (heldout.seated["tube_a"] + 6) % 12
    held = plan_insert(planner, q, heldout, (*xy, HELDOUT_TUBE.length_m / 2), slot)
    default = plan_insert(planner, q, basic, (*xy, 0.040), slot)
    # The grasp closes on the tube's own diameter.
    assert 2 * HELDOUT_TUBE.radius_m in {round(e.width, 4) for e in held.gripper_events}
    assert 0.015 in {round(e.width, 4) for e in default.gripper_events}


def test_a_referee_refuses_an_instance_of_another_binding():
    from labference_ros.tasks.centrifuge.referee import Referee

    (basic,), (heldout,) = generate("basic", 1, 0, 0, 0), generate("heldout_tubes", 1, 0, 0, 0)
    with pytest.raises(ValueError, match="binds 'the default objects', condition heldout_tubes binds 'slim_tubes'"):
        Referee(contract_for("heldout_tubes"), basic)
    with pytest.raises(ValueError, match="binds 'slim_tubes', condition basic binds 'the default objects'"):
        Referee(contract_for("basic"), heldout)


@pytest.mark.slow
def test_the_reference_program_certifies_heldout_instances(tmp_path):
    from labference_ros.campaign.certify import certify_instance

    fam = family("centrifuge_loading")
    for inst in fam.generate("heldout_tubes", 2, 0, 0, 0):
        cert = certify_instance(fam, inst, frames_dir=tmp_path / inst.instance_id)
        assert cert["verdict"] == "certified", cert["reason"]
        assert [s["name"] for s in cert["steps"]] == list(fam.contract_for("heldout_tubes").evaluation_steps)
