"""The non-privileged centrifuge system: the rotor, the seated tube and the standing tube
found in the front camera's pixels (tasks/centrifuge/perception.py), and the second tube
inserted opposite the first in every basic episode of a seed list. Episodes run the
graph's episode loop in one process (oracle.continuation.run_branch from the reset)."""
from __future__ import annotations

import math
import os

import pytest

os.environ.setdefault("MUJOCO_GL", "egl")

from labference_ros.cell.description import centrifuge_cell  # noqa: E402
from labference_ros.oracle.checkpoints import at_reset  # noqa: E402
from labference_ros.oracle.continuation import run_branch  # noqa: E402
from labference_ros.perception.camera import world_camera_calibration  # noqa: E402
from labference_ros.sim.mujoco_backend import MujocoBackend, RenderSettings  # noqa: E402
from labference_ros.tasks import family  # noqa: E402
from labference_ros.tasks.centrifuge.perception import sight  # noqa: E402

FAMILY = family("centrifuge_loading")
CONTRACT = FAMILY.contract_for("basic")


def test_the_front_camera_shows_where_the_rotor_and_the_tubes_are():
    backend = MujocoBackend(RenderSettings(width=320, height=240), FAMILY.name)
    calib = world_camera_calibration("front", 240, 320, centrifuge_cell())
    try:
        for inst in FAMILY.generate("basic", 6, 1, 1, 1):
            backend.load(inst)
            seen = sight(backend.render("front"), calib, CONTRACT)
            assert math.dist(seen.centre[:2], inst.rotor_center[:2]) < 0.003, inst.instance_id
            (taken,) = seen.seated_angles  # one seated tube, however its cap is lit
            true = inst.rotor_yaw_rad + 2 * math.pi * inst.seated["tube_a"] / 12
            assert abs(math.remainder(taken - true, 2 * math.pi)) < math.radians(6), inst.instance_id
            (standing,) = seen.standing
            assert math.dist(standing[:2], backend.measure().objects["tube_b"].position[:2]) < 0.005
    finally:
        backend.close()


@pytest.mark.slow
def test_the_pixel_system_chooses_the_opposite_slot_in_every_basic_episode():
    for inst in FAMILY.generate("basic", 12, 0, 0, 0):  # every occupied slot once and again
        branch = run_branch(at_reset(inst), "opposite_from_pixels", budget_s=45.0)
        target = f"slot_{(inst.seated['tube_a'] + 6) % 12:02d}"
        assert branch.resolved, branch.reason
        assert branch.choice == {"type": "insert", "object": "tube_b", "destination": target}, inst.instance_id
        assert branch.choice_correct
