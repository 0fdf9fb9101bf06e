"""The centrifuge family behind the TaskFamily interface: instance lists, the
referee, the SR/SSR chain and the Oracle site payloads from measurements."""
from __future__ import annotations

import math

import numpy as np
import pytest
from test_centrifuge_referee import Cell

from labference_ros.core.measurements import ObjectMeasurement
from labference_ros.core.operations import WAIT_OP, insert
from labference_ros.tasks import available
from labference_ros.tasks.centrifuge.family import FAMILY
from labference_ros.tasks.centrifuge.oracle_scope import rotor_pose


def rotor_object(instance) -> ObjectMeasurement:
    h = instance.rotor_yaw_rad / 2
    return ObjectMeasurement("rotor", "rotor", instance.rotor_center, (math.cos(h), 0.0, 0.0, math.sin(h)), 0.0, 0.0)


def test_instance_lists_round_trip_and_pairs_are_basic_only(tmp_path):
    insts = FAMILY.generate("basic", 3, 1, 2, 3)
    pairs = FAMILY.generate_pairs("basic", 2, 1, 2, 3)
    FAMILY.write_instances(tmp_path / "list.json", insts + pairs)
    back = FAMILY.read_instances(tmp_path / "list.json")
    assert back == insts + [m for p in pairs for m in p]
    with pytest.raises(ValueError, match="basic"):
        FAMILY.generate_pairs("extended", 1, 1, 2, 3)
    assert "centrifuge_loading" in available()  # registered: centrifuge_sim.launch.py runs it


def test_oracle_payloads_come_from_the_measured_rotor_and_tubes():
    inst = FAMILY.generate("basic", 1, 0, 0, 0)[0]
    contract = FAMILY.contract_for("basic")
    pose = rotor_pose(rotor_object(inst))
    assert pose.yaw_rad == pytest.approx(inst.rotor_yaw_rad if inst.rotor_yaw_rad <= math.pi
                                         else inst.rotor_yaw_rad - 2 * math.pi)
    cell = Cell(inst, contract)
    objects = {**cell.measure().objects, "rotor": rotor_object(inst)}
    frames = FAMILY.geometry_frames(objects)
    assert len(frames) == 12 and frames[3]["slot"] == "slot_03"
    assert np.allclose(frames[3]["mouth"], cell.frames[3].mouth) and np.allclose(frames[3]["axis"], cell.frames[3].axis)

    class World:  # what the continuation's world offers a family
        instance = inst

        def measure(self):
            return type("M", (), {"objects": objects})()

    j = inst.seated["tube_a"]
    assert FAMILY.state_payload(World()) == {"occupied_slots": [f"slot_{j:02d}"]}
    assert FAMILY.decision_rule((WAIT_OP, insert("tube_b", "slot_05"))) == insert("tube_b", "slot_05")
    hidden = set(contract.diagnostics.hidden_keys)
    assert not hidden & set(FAMILY.state_payload(World())) and not hidden & set(frames[0])


def test_the_familys_referee_and_step_chain_score_an_episode():
    inst = FAMILY.generate("basic", 1, 0, 0, 0)[0]
    cell = Cell(inst, FAMILY.contract_for("basic"))
    cell.referee = FAMILY.make_referee(FAMILY.contract_for("basic"), inst, episode_id="ep", session_id="s",
                                       deadline_s=60.0)
    cell.run(0.5)
    cell.grasp("tube_b")
    cell.insert("tube_b", (inst.seated["tube_a"] + 6) % 12)
    cell.run(3.5)
    scores = cell.referee.scores()
    chain = FAMILY.evaluation_chain(FAMILY.contract_for("basic").evaluation_steps)
    assert [name for name, _ in chain] == ["opposite_slot_chosen", "inserted", "terminal_dwell_complete"]
    assert all(predicate(scores) for _, predicate in chain)
    with pytest.raises(ValueError, match="unknown evaluation steps"):
        FAMILY.evaluation_chain(["reading_ready"])
