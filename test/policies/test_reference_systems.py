"""The reference systems in a closed loop on MujocoBackend (no ROS):
display_reader selects from pixels alone, fixed_preference moves its
preference, scripted_expert completes."""
import json

import numpy as np
import pytest

from labference_ros.tasks.weighing.instances import generate, generate_pairs
from labference_ros.core.measurements import LEFT_FINGER, RIGHT_FINGER
from labference_ros.tasks.weighing.objects import STANDARD_MASSES_G
from labference_ros.policies import available, make
from closed_loop import run_episode
from sim_observation import settled_observation

# basic-1-0000..0003 require std_10, std_20, std_50, std_100 in turn.
INSTANCES = generate("basic", 4, task_seed=1, layout_seed=100, policy_seed=0)


def pan_standards(backend):
    w = backend.measure()
    return {n for n, o in w.objects.items() if n.startswith("std_") and "pan" in o.contacts}


def assert_resting_on_pan(backend, name):
    obj = backend.measure().objects[name]
    assert "pan" in obj.contacts, obj
    assert LEFT_FINGER not in obj.contacts and RIGHT_FINGER not in obj.contacts, obj
    assert obj.linear_speed < 1e-3, obj


def test_registry_names_and_profiles():
    assert {"scripted_expert", "display_reader", "fixed_preference", "http", "openpi"} <= set(available())
    flags = {n: make(n).privileged for n in ("scripted_expert", "display_reader", "fixed_preference")}
    assert flags == {"scripted_expert": True, "display_reader": False, "fixed_preference": False}
    prof = make("fixed_preference", preference="std_20").profile()
    json.dumps(prof)
    assert prof["params"]["preference"] == "std_20" and prof["action_spec"]["dim"] == 8
    with pytest.raises(KeyError):
        make("no_such_system")
    with pytest.raises(ValueError):
        make("fixed_preference", preference="std_7")


@pytest.mark.parametrize("instance", INSTANCES, ids=lambda i: i.instance_id)
def test_display_reader_adds_the_required_standard(instance):
    system = make("display_reader")
    result = run_episode(system, instance)
    (required,) = instance.goal_set
    assert pan_standards(result.backend) == {required}
    assert_resting_on_pan(result.backend, required)
    assert result.reading.stable and abs(result.reading.displayed_g - instance.target_g) <= 1.0
    assert result.rejected == []
    assert system.decisions[0]["choice"] == required
    result.backend.close()


def test_display_reader_follows_the_hidden_mass_across_a_pair():
    """Same layout, same target, different sample: different choices."""
    a, b = generate_pairs("basic", 1, task_seed=5, layout_seed=300, policy_seed=0)[0]
    assert a.layout == b.layout and a.goal_set != b.goal_set
    for inst in (a, b):
        system = make("display_reader")
        result = run_episode(system, inst, max_s=22.0)
        assert pan_standards(result.backend) == set(inst.goal_set)
        result.backend.close()


@pytest.mark.parametrize("instance, completes", [(INSTANCES[2], True), (INSTANCES[0], False)],
                         ids=["preference_required", "preference_wrong"])
def test_fixed_preference_transfers_its_preference(instance, completes):
    result = run_episode(make("fixed_preference"), instance)
    assert pan_standards(result.backend) == {"std_50"}
    assert_resting_on_pan(result.backend, "std_50")
    expected = instance.sample_mass_g + STANDARD_MASSES_G["std_50"]
    assert result.reading.stable and abs(result.reading.displayed_g - expected) <= 1.0
    assert (abs(result.reading.displayed_g - instance.target_g) <= 1.0) == completes
    result.backend.close()


def test_scripted_expert_completes():
    instance = INSTANCES[3]
    result = run_episode(make("scripted_expert"), instance)
    assert pan_standards(result.backend) == set(instance.goal_set)
    assert result.reading.stable and abs(result.reading.displayed_g - instance.target_g) <= 1.0
    result.backend.close()


def test_scripted_systems_are_deterministic_and_privilege_is_enforced():
    instance, obs, _ = settled_observation(index=3)
    chunks = []
    for _ in range(2):
        system = make("display_reader")
        system.reset("s", 0)
        chunks.append(system.act(obs))
    assert chunks[0].shape == (50, 8) and np.array_equal(chunks[0], chunks[1])
    # The chunk moves: a transfer plan was started from pixels alone.
    assert not np.allclose(chunks[0][-1, :7], obs.joint_positions)
    expert = make("scripted_expert")
    expert.reset("s", 0)
    with pytest.raises(ValueError, match="privileged"):
        expert.act(obs, None)
