"""The cell URDF is generated from the cell description, and its fixture and
camera frames sit where the simulator puts the same bodies."""
from __future__ import annotations

import os
import pathlib

import mujoco
import numpy as np
import pytest
import yourdfpy

from labference_ros.cell.description import weighing_cell
from labference_ros.cell.urdf import generate_urdf
from labference_ros.tasks import family

REPO = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("MUJOCO_GL", "egl")


def test_the_committed_urdf_is_the_generated_one():
    committed = (REPO / "urdf" / "weighing_cell.urdf").read_text()
    assert committed == generate_urdf(weighing_cell()), "regenerate: python -m labference_ros.cell.urdf > urdf/weighing_cell.urdf"


def _sim_frames(instance) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    model = family("feedback_weighing").build_scene(instance).spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    frames = {}
    for urdf_link, body in (("balance_body", "balance_body"), ("pan_load_cell", "pan"),
                            ("balance_display", "balance_display")):
        b = model.body(body).id
        frames[urdf_link] = (data.xpos[b].copy(), data.xmat[b].reshape(3, 3).copy())
    for camera in ("front", "display"):
        c = model.camera(camera).id
        frames[f"{camera}_camera"] = (data.cam_xpos[c].copy(), data.cam_xmat[c].reshape(3, 3).copy())
    return frames


@pytest.mark.parametrize("seed", [0, 5])
def test_fixture_and_camera_frames_match_the_simulator_to_a_millimetre(seed, tmp_path):
    weighing = family("feedback_weighing")
    instance = weighing.generate("basic", 1, task_seed=seed, layout_seed=seed, policy_seed=0)[0]
    path = tmp_path / "cell.urdf"
    path.write_text(generate_urdf(weighing_cell(), balance_xy=instance.layout["balance"]))
    urdf = yourdfpy.URDF.load(str(path), load_meshes=False, build_collision_scene_graph=False)
    sim = _sim_frames(instance)
    assert set(sim) <= set(urdf.link_map)
    for link, (position, rotation) in sim.items():
        pose = urdf.get_transform(link, "world")
        assert np.linalg.norm(pose[:3, 3] - position) < 1e-3, link
        # Axes agree to better than a milliradian.
        assert np.allclose(pose[:3, :3], rotation, atol=1e-3), link


def test_optical_frames_follow_the_ros_convention(tmp_path):
    path = tmp_path / "cell.urdf"
    path.write_text(generate_urdf(weighing_cell()))
    urdf = yourdfpy.URDF.load(str(path), load_meshes=False, build_collision_scene_graph=False)
    cam = urdf.get_transform("front_camera", "world")
    optical = urdf.get_transform("front_camera_optical_frame", "world")
    # MuJoCo cameras look along -z with +y up; optical frames look along +z with +y down.
    assert np.allclose(optical[:3, 2], -cam[:3, 2], atol=1e-9)
    assert np.allclose(optical[:3, 1], -cam[:3, 1], atol=1e-9)
    assert np.allclose(optical[:3, 0], cam[:3, 0], atol=1e-9)
    target = np.array(weighing_cell().cameras["front"].look_at)
    view = (target - optical[:3, 3]) / np.linalg.norm(target - optical[:3, 3])
    assert np.allclose(optical[:3, 2], view, atol=1e-9)
