"""display_reader in the extended condition: it reads the standards on the
pan from pixels, derives the goal subset from the display, and removes and
adds standards in a legal order, scored by the referee core (no ROS)."""
import pytest

from labference_ros.tasks.weighing.contract import weighing_extended
from labference_ros.tasks.weighing.instances import generate, legal_at_start
from labference_ros.core.operations import add, remove
from labference_ros.policies import make
from labference_ros.perception.vision import CameraCalibration, estimate_arrangement, quick_standards_on_pan
from refereed_loop import run_refereed_episode
from sim_observation import observe_settled

# The graph's population for condition:=extended seed:=0 starts with these.
SEED_LIST = generate("extended", 8, task_seed=0, layout_seed=0, policy_seed=0)
# Scored closed loop over 3 of them (3, 2 and 4 corrections; one to two
# minutes each on 2 cores): all 3 complete when measured, at least 2 must.
# The whole list (8 of 8 completed, 21 of 21 first choices legal when measured):
#   .venv/bin/python test/policies/refereed_loop.py display_reader extended 8 0
CLOSED_LOOP = [SEED_LIST[i] for i in (0, 1, 4)]
MIN_COMPLETED = 2

def settled(instance):
    return observe_settled(instance)[0]


@pytest.mark.parametrize("instance", SEED_LIST[:3] + generate("basic", 1, 1, 100, 0),
                         ids=lambda i: i.instance_id)
def test_the_standards_on_the_pan_are_read_from_pixels(instance):
    obs = settled(instance)
    calib = CameraCalibration.from_dict(obs.camera_calibration["front"])
    seen = estimate_arrangement(obs.images["front"], calib)
    assert set(seen.on_pan) == set(instance.initial_on_pan)
    assert set(seen.on_table) == {f"std_{g}" for g in (10, 20, 50, 100)} - set(instance.initial_on_pan)
    assert quick_standards_on_pan(obs.images["front"], calib) == set(instance.initial_on_pan)
    bx, by = instance.layout["balance"]
    assert abs(seen.pan_centre[0] - bx) < 0.01 and abs(seen.pan_centre[1] - by) < 0.01


def test_the_first_decision_is_a_legal_correction():
    instance = SEED_LIST[0]  # 200 g; std_100 on the pan, W* = std_10 + std_20
    system = make("display_reader")
    system.reset("s", 0)
    system.act(settled(instance))
    (d,) = [d for d in system.decisions if "choice" in d]
    assert system.mode == "extended"
    assert d["goal"] == list(instance.goal_set) and d["on_pan"] == list(instance.initial_on_pan)
    assert abs(d["sample_g"] - instance.sample_mass_g) <= 1.0
    assert (d["choice"], d["destination"]) == ("std_100", "table")
    u = legal_at_start(weighing_extended(), instance.target_g, instance.goal_set, instance.initial_on_pan)
    assert remove("std_100") in u and add("std_100") not in u


@pytest.mark.slow
def test_display_reader_completes_extended_weighing_over_a_seed_list():
    results = [run_refereed_episode(make("display_reader"), inst) for inst in CLOSED_LOOP]
    summary = [(r.instance.instance_id, r.completed, r.first_choices) for r in results]
    # Every first choice the referee identified is in U at its opportunity.
    assert all(r.all_first_choices_legal for r in results), summary
    assert all(r.scores["identified_choices"] == r.scores["correct_choices"] for r in results), summary
    assert all(r.rejected_chunks == 0 for r in results), summary
    completed = [r for r in results if r.completed]
    assert len(completed) >= MIN_COMPLETED, summary
    for r in completed:
        # One identified choice per correction the instance needs, and the goal set reached.
        edits = len(set(r.instance.initial_on_pan) ^ set(r.instance.goal_set))
        assert len(r.first_choices) == edits, summary
        assert r.final_on_pan == set(r.instance.goal_set), r.instance.instance_id
