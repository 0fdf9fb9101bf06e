"""The sensor-only referee (the family's sensor estimator, as the world_estimator node
runs it) beside the privileged referee in the same episodes (oracle/sensor_agreement.py):
over a fixed seed list and three reference systems they agree on every first choice,
execution outcome and completion. Markers are the objects' true poses, hidden while the
hand holds one. Where the sensors cannot tell, the sensor referee records no choice
rather than a wrong one: fingers pressed onto a weight's top (the one known divergence,
docs/real-rig.md)."""
import json

import pytest

from labference_ros.core.agreement import differences
from labference_ros.oracle.sensor_agreement import run_with_shadow
from labference_ros.tasks.weighing.instances import generate

BASIC = generate("basic", 2, task_seed=1, layout_seed=100, policy_seed=0)
EXTENDED = generate("extended", 2, task_seed=3, layout_seed=103, policy_seed=0)
# One basic and one extended episode per system (benchmarks/bench_sensor_agreement.py runs more).
CASES = [("scripted_expert", BASIC[0]), ("scripted_expert", EXTENDED[0]), ("display_reader", BASIC[1]),
         ("display_reader", EXTENDED[1]), ("fixed_preference", BASIC[0]), ("fixed_preference", EXTENDED[1])]


def both_records(agreement) -> str:
    keep = ("first_choice_correct", "executed", "completion_class", "opportunity_records", "obligations")
    return json.dumps({side: {k: getattr(agreement, side).get(k) for k in keep}
                       for side in ("privileged", "sensor")}, indent=1, default=str)[:6000]


@pytest.mark.slow
@pytest.mark.parametrize("system,instance", CASES, ids=[f"{s}-{i.instance_id}" for s, i in CASES])
def test_the_sensor_referee_agrees_with_the_privileged_one(system, instance):
    result = run_with_shadow(system, instance, max_s=60.0)
    assert result.agrees, "\n".join(result.differences) + "\n" + both_records(result)
    assert result.frames > 500
    # The episodes are the outcomes the systems give: the expert and the reader complete.
    if system != "fixed_preference":
        assert result.sensor["valid_complete"] is True, both_records(result)


@pytest.mark.slow
def test_fingers_pressed_on_a_weight_the_sensors_cannot_see_are_no_choice_rather_than_a_wrong_one():
    """fixed_preference presses its closed fingers (13 mm apart; the weight is 32 mm wide)
    onto std_50's top and the pan into overload: the simulator sees both fingers
    touch std_50, a real cell sees a closing hand over a hidden marker. The sensor referee
    records no choice there (it names no other object) and the same overload."""
    result = run_with_shadow("fixed_preference", EXTENDED[0], max_s=60.0)
    privileged = result.privileged["opportunity_records"][1]
    assert privileged["first_choice"]["object"] == "std_50" and privileged["execution"] == "failed"
    sensor_choices = [o["first_choice"] for o in result.sensor["opportunity_records"] if o["first_choice"]]
    assert sensor_choices == [], both_records(result)
    assert result.sensor["violations"] == result.privileged["violations"] == ["overload"]
    # The choice and its failed execution only the simulator saw, and what they count.
    assert all(d.startswith(("first_choice_correct", "executed", "opportunities", "opportunity 2 ",
                             "category incorrect_choice", "category execution_failure"))
               for d in result.differences), result.differences
    assert any("opportunity 2 first_choice" in d for d in result.differences)


def test_differences_name_the_field_and_both_values():
    a = {"executed": True, "opportunity_records": [{"opportunity_id": 1, "first_choice": {"object": "std_10"}}]}
    b = {"executed": False, "opportunity_records": [{"opportunity_id": 1, "first_choice": {"object": "sample"}}]}
    assert differences(a, a) == []
    found = differences(a, b)
    assert "executed: privileged True, sensor False" in found
    assert any(d.startswith("opportunity 1 first_choice") and "sample" in d for d in found)
    assert differences(a, {**a, "opportunity_records": []}) == ["opportunities: privileged 1, sensor 0"]
