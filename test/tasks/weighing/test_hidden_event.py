"""Weighing's hidden-event condition (core.external_events): instances carry their
trigger time drawn with the task seed; until the ready lamp lights the legal set is
Wait and touching a standard, the sample or the pan is a premature interaction; the
simulator lights the lamp at the trigger tick and the display decoder sees it."""
from __future__ import annotations

import json

import pytest

from labference_ros.core.external_events import draw_trigger_time
from labference_ros.core.operations import WAIT_OP, add
from labference_ros.tasks.weighing.contract import READY_LAMP, contract_for
from labference_ros.tasks.weighing.instance import READY_LAMP_RULE, WeighingInstance
from labference_ros.tasks.weighing.instances import generate
from labference_ros.tasks.weighing.referee import Referee
from labference_ros.tasks.weighing.synthetic_world import SyntheticWorld


def test_instances_record_a_trigger_time_drawn_with_their_task_seed():
    instances = generate("hidden_event", 6, 0, 0, 0)
    for inst in instances:
        assert inst.external_event["trigger_t"] == draw_trigger_time(READY_LAMP, inst.task_seed)
        assert 6.0 <= inst.external_event["trigger_t"] <= 12.0
        assert READY_LAMP_RULE in inst.public_instruction()
        assert str(inst.external_event["trigger_t"]) not in inst.public_instruction()  # hidden
        assert WeighingInstance.from_json(inst.to_json()) == inst
    assert len({i.external_event["trigger_t"] for i in instances}) >= 3
    # Basic stays as it was: no event, no new key in its record, the same contract.
    basic = generate("basic", 1, 0, 0, 0)[0]
    assert "external_event" not in json.loads(basic.to_json()) and READY_LAMP_RULE not in basic.public_instruction()
    assert "external_event" not in contract_for("basic").to_dict()
    assert contract_for("hidden_event").to_dict()["external_event"]["name"] == "ready_lamp"
    # run.json's observation.environment declares the event for this condition alone.
    from labference_ros.tasks import family

    weighing = family("feedback_weighing")
    assert weighing.environment_profile("hidden_event")["external_event"] == "ready_lamp"
    assert weighing.environment_profile("basic") == {} and weighing.environment_profile() == {}


def test_a_referee_refuses_an_instance_without_its_trigger_time():
    inst = generate("basic", 1, 0, 0, 0)[0]
    with pytest.raises(ValueError, match="lacks the trigger time"):
        Referee(contract_for("hidden_event"), inst)


def _episode(trigger_t=3.0):
    inst = generate("hidden_event", 1, 0, 0, 0)[0]
    inst = WeighingInstance(**{**inst.__dict__, "external_event": {**inst.external_event, "trigger_t": trigger_t}})
    ref = Referee(contract_for("hidden_event"), inst, episode_id="ep")
    return inst, ref, SyntheticWorld(inst, ref)


def test_waiting_for_the_event_then_acting_completes_without_premature_interactions():
    inst, ref, world = _episode(3.0)
    world.run(1.0)
    assert ref.legal_set() == (WAIT_OP,)  # the reading is ready, the lamp is not
    world.run(2.2)
    (event,) = world.events("external_event")
    assert event["t"] == pytest.approx(3.0) and event["detail"]["trigger_t"] == 3.0
    assert ref.legal_set() == (add(inst.goal_set[0]),)
    world.move(inst.goal_set[0], "pan")
    world.run(4.0)
    s = ref.scores()
    e = s["external_event"]
    assert e["reached"] and e["premature_interactions"] == 0 and not e["premature"] and e["completed"]
    assert e["response"]["correct"] is True and e["response_latency_s"] == pytest.approx(0.2 + 0.04 + 0.1, abs=0.03)
    assert s["completion_class"] == "clean" and s["categories"]["premature_interaction"] == 0


def test_acting_before_the_event_is_recorded_and_the_task_cannot_end_before_it():
    inst, ref, world = _episode(6.0)
    world.run(0.5)
    world.move(inst.goal_set[0], "pan")  # at once, lamp dark
    world.run(1.5)
    assert not ref.z.physically_complete  # the terminal predicate waits for the event
    premature = world.events("premature_interaction")
    assert [e["object"] for e in premature] == [inst.goal_set[0]] and premature[0]["t"] < 6.0
    (choice,) = [e for e in world.events("choice") if e["t"] < 6.0]
    assert choice["detail"]["correct"] is False and choice["detail"]["legal_set"] == [WAIT_OP.to_dict()]
    world.run(6.0)
    s = ref.scores()
    e = s["external_event"]
    assert e["reached"] and e["premature"] and e["premature_interactions"] == 1 and e["completed"]
    assert e["response"] is None  # nothing left to choose after the event
    assert s["physically_complete"] and s["complete_t"] >= 6.0 + contract_for("hidden_event").terminal.dwell_s - 1e-6
    assert s["completion_class"] != "clean"


def test_the_simulated_lamp_lights_at_the_trigger_tick_and_the_display_shows_it():
    from labference_ros.oracle.world import World
    from labference_ros.perception.display_decode import decode_display

    inst, _, _ = _episode(1.0)
    world = World(inst)
    try:
        world.start_environment()
        images, _, _ = world.sensors()
        assert not decode_display(images["display"]).ready_lamp
        records = []
        while world.t < 1.5:
            world.advance(0.02)
            m = world.measure()
            if m.environment:
                records.append((m.t, m.environment))
        (t, env), = records
        assert t == pytest.approx(1.0, abs=0.011) and env["external_event"]["name"] == "ready_lamp"
        images, _, _ = world.sensors()
        reading = decode_display(images["display"])
        assert reading.ready_lamp and reading.ok
    finally:
        world.close()


@pytest.mark.slow
@pytest.mark.parametrize("system, certified", [("display_reader", True), ("scripted_expert", True),
                                               ("impatient_expert", False)])
def test_certification_passes_the_systems_that_wait_and_rejects_the_impatient_one(tmp_path, system, certified):
    # Certification's in-process episode (campaign/certify.py) demands a clean completion:
    # no premature interaction, every native first choice correct and executed.
    from labference_ros.campaign.certify import certify_instance
    from labference_ros.tasks import family

    weighing = family("feedback_weighing")
    instance = generate("hidden_event", 3, 0, 0, 0)[2]  # the lamp at 6.6 s
    cert = certify_instance(weighing, instance, frames_dir=tmp_path, system_name=system)
    assert (cert["verdict"] == "certified") is certified, (cert["failing_step"], cert["reason"])
    if not certified:
        assert cert["scores"]["completion_class"] != "clean"
