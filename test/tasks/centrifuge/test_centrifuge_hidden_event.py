"""Centrifuge loading's hidden-event condition (core.external_events): the ready lamp
beside the rotor lights at each instance's hidden trigger time; until then the legal
set is Wait and touching a tube or the rotor is a premature interaction. In-process
episodes (the Oracle's world and episode loop, as certification runs them): the expert
waits until the front camera shows the lamp, the impatient expert does not."""
from __future__ import annotations

import json
import os

import pytest

from labference_ros.core.external_events import draw_trigger_time
from labference_ros.core.operations import WAIT_OP
from labference_ros.tasks import family
from labference_ros.tasks.centrifuge.contract import READY_LAMP, contract_for
from labference_ros.tasks.centrifuge.instances import READY_LAMP_RULE, CentrifugeInstance, generate

CENTRIFUGE = family("centrifuge_loading")


def test_instances_record_a_trigger_time_and_basic_keeps_its_form():
    instances = generate("hidden_event", 4, 0, 0, 0)
    for inst in instances:
        assert inst.external_event["trigger_t"] == draw_trigger_time(READY_LAMP, inst.task_seed)
        assert 6.0 <= inst.external_event["trigger_t"] <= 12.0 and len(inst.seated) == 1
        assert READY_LAMP_RULE in inst.public_instruction()
        assert CentrifugeInstance.from_json(inst.to_json()) == inst
    basic = generate("basic", 1, 0, 0, 0)[0]
    assert "external_event" not in json.loads(basic.to_json()) and READY_LAMP_RULE not in basic.public_instruction()
    assert "external_event" not in contract_for("basic").to_dict()
    with pytest.raises(ValueError, match="lacks the trigger time"):
        CENTRIFUGE.make_referee(contract_for("hidden_event"), basic, episode_id="e", session_id="s")


def _episode(system_name: str, instance):
    os.environ.setdefault("MUJOCO_GL", "egl")
    from labference_ros.oracle.continuation import run_in_world
    from labference_ros.oracle.world import World
    from labference_ros.policies import make

    world = World(instance)
    referee = CENTRIFUGE.make_referee(contract_for("hidden_event"), instance, episode_id="e", session_id="s",
                                      deadline_s=60.0)
    system = make(system_name, task=CENTRIFUGE.name)
    try:
        world.start_environment()
        system.reset("s", instance.policy_seed)
        referee.step(world.measure())
        assert referee.legal_set() == (WAIT_OP,)
        end = run_in_world(system, world, referee, session="s", deadline_t=60.0, stop_hold_s=4.0)
        return end, referee.scores(world.t), referee.events
    finally:
        system.close()
        world.close()


@pytest.mark.slow
def test_the_expert_waits_for_the_lamp_and_the_impatient_one_does_not():
    instance = generate("hidden_event", 3, 0, 0, 0)[2]  # the lamp at 6.6 s
    trigger = instance.external_event["trigger_t"]

    end, scores, events = _episode("scripted_expert", instance)
    e = scores["external_event"]
    assert end == "completed" and e["reached"] and abs(e["t"] - trigger) < 1e-6, e
    assert e["premature_interactions"] == 0 and e["completed"] and e["response"]["correct"] is True, e
    assert all(ev["t"] >= trigger for ev in events if ev["category"] in ("grasp", "choice"))
    assert scores["completion_class"] == "clean"

    end, scores, events = _episode("impatient_expert", instance)
    e = scores["external_event"]
    premature = [ev for ev in events if ev["category"] == "premature_interaction"]
    assert e["premature"] and e["premature_interactions"] == len(premature) >= 1, e
    assert all(ev["t"] < trigger for ev in premature) and premature[0]["object"] == "tube_b"
    assert scores["completion_class"] != "clean"


@pytest.mark.slow
def test_the_pixel_system_waits_for_the_lamp_too():
    instance = generate("hidden_event", 3, 0, 0, 0)[2]
    end, scores, events = _episode("opposite_from_pixels", instance)
    e = scores["external_event"]
    assert end == "completed" and e["premature_interactions"] == 0 and e["response"]["correct"] is True, e
    assert scores["completion_class"] == "clean"
