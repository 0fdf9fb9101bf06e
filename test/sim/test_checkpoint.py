"""Checkpoints continue bit for bit (mjSTATE_INTEGRATION incl. warm start)."""
import numpy as np
import pytest

from labference_ros.core.measurements import LEFT_FINGER, RIGHT_FINGER
from labference_ros.skills.motion import PickPlacePlanner, execute_plan
from labference_ros.tasks.weighing.moves import plan_to_pan
from labference_ros.sim.mujoco_backend import MujocoBackend
from sim_helpers import make_instance


def snapshot(backend):
    js = backend.joint_state()
    world = backend.measure()
    poses = {n: (o.position, o.orientation) for n, o in world.objects.items()}
    return (backend.sim_time, js.position, js.velocity, poses,
            backend.pan_wrench(), backend.gripper_state())


@pytest.mark.parametrize("after_grasp_s, squeezing", [(0.1, False), (0.35, True)])
def test_checkpoint_mid_grasp_continues_identically(after_grasp_s, squeezing):
    """0.1 s: fingers still travelling (gripper ramp state); 0.35 s: squeezing."""
    inst = make_instance(layout_seed=4)
    backend = MujocoBackend()
    backend.load(inst)
    world = backend.measure()
    plan = plan_to_pan(PickPlacePlanner(), backend.joint_state().position[:7], "std_50",
                       world.objects["std_50"].position, inst.layout["balance"])
    grasp_t = dict((label, t) for t, label in plan.labels)["grasp"]
    mid = int(round((grasp_t + after_grasp_s) / plan.dt))
    execute_plan(backend, plan, 0, mid)
    contacts = backend.measure().objects["std_50"].contacts
    touching = LEFT_FINGER in contacts or RIGHT_FINGER in contacts
    assert touching == squeezing
    blob = backend.save_state()
    n = 150  # 1.5 s: squeeze, lift and part of the transfer
    execute_plan(backend, plan, mid, mid + n)
    first = snapshot(backend)

    backend.restore_state(blob)
    execute_plan(backend, plan, mid, mid + n)
    second = snapshot(backend)
    assert first == second  # exact float equality, not approx

    # A fresh world of the same instance continues identically from the blob.
    other = MujocoBackend()
    other.load(inst)
    other.restore_state(blob)
    execute_plan(other, plan, mid, mid + n)
    assert snapshot(other) == first
    assert np.array_equal(other.data.qacc_warmstart, backend.data.qacc_warmstart)
    assert first[3]["std_50"][0][2] > second[3]["std_50"][0][2] - 1e-12  # lifted, same height
    backend.close()
    other.close()


def test_checkpoint_refuses_another_instance():
    a, b = MujocoBackend(), MujocoBackend()
    a.load(make_instance(layout_seed=4))
    b.load(make_instance(layout_seed=5))
    blob = a.save_state()
    try:
        b.restore_state(blob)
    except ValueError as e:
        assert "different instance" in str(e)
    else:
        raise AssertionError("restore into another instance must fail")
