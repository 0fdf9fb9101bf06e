"""The balance reads the load cell: physics in, grams out."""
import numpy as np
import pytest

from labference_ros.tasks.weighing.layout import BALANCE, pan_slot
from labference_ros.core.measurements import LEFT_FINGER, RIGHT_FINGER
from labference_ros.tasks.weighing.objects import SAMPLE
from labference_ros.skills.motion import PickPlacePlanner, execute_plan
from labference_ros.sim.mujoco_backend import MujocoBackend
from labference_ros.tasks.weighing.scene import STANDARD_SHAPES
from sim_helpers import balance_for, make_instance, run_balance


@pytest.fixture
def backend():
    b = MujocoBackend()
    yield b
    b.close()


def test_standard_dropped_on_pan_settles_and_becomes_stable(backend):
    inst = make_instance(sample_mass_g=130.0)
    backend.load(inst)
    balance = balance_for(backend)
    start = run_balance(backend, balance, 1.5)
    assert start[-1].stable and abs(start[-1].displayed_g - 130.0) <= 0.1
    # Drop the 50 g standard from 1 cm above its pan slot.
    x, y = pan_slot("std_50", inst.layout["balance"])
    h = STANDARD_SHAPES["std_50"].height
    backend.set_object_pose("std_50", (x, y, BALANCE.pan_top_z + h / 2 + 0.01))
    after = run_balance(backend, balance, 3.0)
    assert not all(r.stable for r in after[:50]), "a new load must break stability first"
    final = after[-1]
    assert final.valid and final.stable
    assert abs(final.displayed_g - 180.0) <= 0.1
    assert "pan" in backend.measure().objects["std_50"].contacts


@pytest.mark.parametrize("mass_g", [61.7, 188.3])
def test_hidden_sample_mass_is_read_through_physics(backend, mass_g):
    backend.load(make_instance(layout_seed=4, sample_mass_g=mass_g))
    readings = run_balance(backend, balance_for(backend), 2.0)
    assert readings[-1].stable and abs(readings[-1].displayed_g - mass_g) <= 0.1


def test_gripper_pressing_on_pan_raises_reading(backend):
    inst = make_instance(sample_mass_g=100.0)
    backend.load(inst)
    balance = balance_for(backend)
    before = run_balance(backend, balance, 1.5)[-1].filtered_g
    backend.set_gripper(0.0, speed=0.1)  # closed fingers make a narrow probe
    planner = PickPlacePlanner()
    x, y = pan_slot("std_10", inst.layout["balance"])
    fingertip_below_tcp = 0.0085  # pad half height
    above = (x, y, BALANCE.pan_top_z + 0.10)
    press = (x, y, BALANCE.pan_top_z + fingertip_below_tcp - 0.004)
    plan = planner.plan_tcp_moves(backend.joint_state().position[:7], [above, press], hold_s=0.5)
    execute_plan(backend, plan)
    pressed = run_balance(backend, balance, 0.5)[-1]
    world = backend.measure()
    assert world.hand_on_pan
    assert {LEFT_FINGER, RIGHT_FINGER} & set(world.pan_contacts)
    assert pressed.raw_g > before + 5.0
    assert SAMPLE in world.pan_contacts  # the sample still rests there
