"""Scripted pick-and-place moves every object where it was asked to go."""
import numpy as np
import pytest

from labference_ros.tasks.weighing.layout import pan_slot
from labference_ros.core.measurements import LEFT_FINGER, RIGHT_FINGER
from labference_ros.tasks.weighing.objects import SAMPLE, STANDARD_MASSES_G
from labference_ros.skills.motion import PickPlacePlanner, execute_plan
from labference_ros.tasks.weighing.moves import plan_to_pan, plan_to_table
from labference_ros.sim.mujoco_backend import MujocoBackend
from sim_helpers import balance_for, make_instance, run_balance


@pytest.fixture(scope="module")
def planner():
    return PickPlacePlanner()


def upright(obj) -> bool:
    w, x, y, z = obj.orientation
    return 1 - 2 * (x * x + y * y) > 0.99  # body z-axis . world z


def assert_resting(obj, support: str, xy, tol=0.01):
    assert support in obj.contacts, obj
    assert LEFT_FINGER not in obj.contacts and RIGHT_FINGER not in obj.contacts, obj
    assert upright(obj), obj
    assert np.hypot(obj.position[0] - xy[0], obj.position[1] - xy[1]) < tol, obj
    assert obj.linear_speed < 1e-3


@pytest.mark.parametrize("name, layout_seed", [("std_10", 3), ("std_20", 4), ("std_50", 5),
                                               ("std_100", 6)])
def test_standard_from_table_onto_pan(planner, name, layout_seed):
    inst = make_instance(layout_seed=layout_seed, sample_mass_g=130.0)
    backend = MujocoBackend()
    backend.load(inst)
    balance = balance_for(backend)
    world = backend.measure()
    plan = plan_to_pan(planner, backend.joint_state().position[:7], name,
                       world.objects[name].position, inst.layout["balance"])
    execute_plan(backend, plan)
    reading = run_balance(backend, balance, 2.0)[-1]
    obj = backend.measure().objects[name]
    assert_resting(obj, "pan", pan_slot(name, inst.layout["balance"]))
    assert reading.stable and abs(reading.displayed_g - (130.0 + STANDARD_MASSES_G[name])) <= 0.1
    backend.close()


def test_standard_from_pan_back_to_table_and_sample_moves(planner):
    inst = make_instance(layout_seed=7, sample_mass_g=150.0, initial_on_pan=("std_100",))
    backend = MujocoBackend()
    backend.load(inst)
    balance = balance_for(backend)
    assert abs(run_balance(backend, balance, 1.5)[-1].displayed_g - 250.0) <= 0.1
    world = backend.measure()
    plan = plan_to_table(planner, backend.joint_state().position[:7], "std_100",
                         world.objects["std_100"].position, inst.layout["std_100"])
    execute_plan(backend, plan)
    assert_resting(backend.measure().objects["std_100"], "table", inst.layout["std_100"])
    # The sample can be handled too: off the pan onto the freed table spot.
    spot = (inst.layout["std_100"][0], inst.layout["std_100"][1] + 0.0)
    spot = (spot[0] - 0.11 if spot[0] > 0.45 else spot[0] + 0.11, spot[1])
    world = backend.measure()
    plan = plan_to_table(planner, backend.joint_state().position[:7], SAMPLE,
                         world.objects[SAMPLE].position, spot)
    execute_plan(backend, plan)
    reading = run_balance(backend, balance, 2.0)[-1]
    assert_resting(backend.measure().objects[SAMPLE], "table", spot)
    assert reading.stable and abs(reading.displayed_g) <= 0.1
    backend.close()
