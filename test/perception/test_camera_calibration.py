"""A world camera's calibration computed from the cell description alone (as a
real rig would) equals the simulator's camera, and pixels project consistently."""
from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402

from labference_ros.cell.description import weighing_cell  # noqa: E402
from labference_ros.perception.camera import world_camera_calibration  # noqa: E402
from labference_ros.sim.camera import calibration_from_model  # noqa: E402
from labference_ros.tasks import family  # noqa: E402


def test_front_calibration_from_the_cell_equals_the_simulators_camera():
    weighing = family("feedback_weighing")
    instance = weighing.generate("basic", 1, task_seed=2, layout_seed=2, policy_seed=0)[0]
    model = weighing.build_scene(instance).spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    sim = calibration_from_model(model, data, "front", 240, 320)
    cell = world_camera_calibration("front", 240, 320, weighing_cell())
    assert (cell.width, cell.height, cell.fovy_deg) == (sim.width, sim.height, sim.fovy_deg)
    assert np.allclose(cell.position, sim.position, atol=1e-12)
    assert np.allclose(cell.rotation, sim.rotation, atol=1e-9)
    pan = np.array([*instance.layout["balance"], 0.065])
    assert np.allclose(cell.project(pan), sim.project(pan), atol=1e-6)
