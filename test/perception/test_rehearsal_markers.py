"""The rehearsal scene's markers (scene.build_weighing_spec(fiducials=True)): every
object's top-face marker is read on the overhead camera, and the estimator puts each
resting object where its viewing ray meets its surface, to within a few millimetres;
a marker pose taken as solved is centimetres off. The label colours stay readable
for the pixel-based systems on the front camera."""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")

from labference_ros.cell.description import weighing_cell  # noqa: E402
from labference_ros.core.geometry import BALANCE_MARKER, sensed_balance_xy  # noqa: E402
from labference_ros.perception.camera import world_camera_calibration  # noqa: E402
from labference_ros.perception.fiducials import detect_markers  # noqa: E402
from labference_ros.perception.vision import estimate_scene  # noqa: E402
from labference_ros.sim.mujoco_backend import MujocoBackend, RenderSettings  # noqa: E402
from labference_ros.tasks import family  # noqa: E402
from labference_ros.tasks.weighing.scene import MARKER_CAMERA  # noqa: E402
from labference_ros.tasks.weighing.sensor_estimator import SensorFrame, SensorWorldEstimator  # noqa: E402

CELL = weighing_cell()
TABLE = CELL.marker_table()
OBJECTS = [name for name in TABLE if name != BALANCE_MARKER]  # the balance's marker is on its pan
SIZE = (1200, 1600)  # the rehearsal graph's marker camera (height, width)
VIEWPOINT = CELL.cameras[MARKER_CAMERA].position


@pytest.fixture(scope="module")
def backend():
    b = MujocoBackend(RenderSettings(width=320, height=240, fiducials=True, sizes={MARKER_CAMERA: SIZE}))
    yield b
    b.close()


def instances():
    weighing = family("feedback_weighing")
    return [*weighing.generate("basic", 2, task_seed=3, layout_seed=3, policy_seed=0),
            *weighing.generate("extended", 2, task_seed=4, layout_seed=4, policy_seed=0)]


def tracked(image, prefer_normal=(0.0, 0.0, 1.0)):
    """What fiducial_tracker publishes: each object's centre and orientation (w, x, y, z)."""
    from labference_ros.monitoring.kinematics import matrix_to_quaternion

    lengths = {e["id"]: e["length_m"] for e in TABLE.values()}
    found = detect_markers(image, world_camera_calibration(MARKER_CAMERA, *SIZE, weighing_cell()), lengths,
                           prefer_normal=prefer_normal)
    out = {}
    for name, entry in TABLE.items():
        pose = found.get(entry["id"])
        if pose is not None:
            rotation = np.asarray(pose.rotation).reshape(3, 3)
            centre = np.asarray(pose.position) + rotation @ np.asarray(entry["offset_m"])
            out[name] = (tuple(centre), tuple(matrix_to_quaternion(rotation)))
    return out


def estimated(instance, markers, viewpoint):
    estimator = SensorWorldEstimator.for_instance(instance)
    frame = SensorFrame(t=0.0, markers=markers, fingertip=(0.3, 0.0, 0.5), gripper_width=0.08,
                        gripper_closing=False, balance=None, viewpoint=viewpoint)
    return {name: o.position for name, o in estimator.estimate(frame).objects.items()}


@pytest.mark.parametrize("index", range(4))
def test_every_resting_object_is_placed_by_its_marker_to_3_mm(backend, index):
    instance = instances()[index]
    backend.load(instance)
    markers = tracked(backend.render(MARKER_CAMERA))
    assert sorted(markers) == sorted(TABLE), f"{instance.instance_id}: markers read {sorted(markers)}"
    truth = {name: backend.data.body(name).xpos.copy() for name in OBJECTS}
    along_ray = estimated(instance, markers, VIEWPOINT)
    errors = {name: float(np.linalg.norm(np.asarray(along_ray[name]) - truth[name])) for name in OBJECTS}
    assert max(errors.values()) < 0.003, f"{instance.instance_id}: {errors}"
    as_solved = {name: float(np.linalg.norm(np.asarray(markers[name][0]) - truth[name])) for name in OBJECTS}
    assert max(as_solved.values()) > 0.01, f"the solved poses alone are already exact: {as_solved}"


@pytest.mark.parametrize("index", range(4))
def test_the_balance_is_placed_by_the_marker_on_its_pan_to_3_mm(backend, index):
    # What the world estimator's balance_marker:=true reads in the rehearsal: the pan's centre,
    # slid along the viewing ray to the pan's height, where the instance put the balance.
    instance = instances()[index]
    backend.load(instance)
    markers = tracked(backend.render(MARKER_CAMERA))
    assert BALANCE_MARKER in markers, f"{instance.instance_id}: markers read {sorted(markers)}"
    sensed = sensed_balance_xy(markers[BALANCE_MARKER][0], CELL.balance.pan_top_z, VIEWPOINT)
    pan = backend.data.body("pan").xpos[:2]
    assert np.allclose(pan, instance.layout["balance"], atol=1e-9)
    assert float(np.linalg.norm(np.asarray(sensed) - pan)) < 0.003, (instance.instance_id, sensed, pan)


def test_of_the_two_fitting_poses_the_face_up_one_is_taken(backend):
    instance = instances()[0]
    backend.load(instance)
    image = backend.render(MARKER_CAMERA)

    def tilts(poses):
        out = {}
        for name, (_centre, (w, x, y, z)) in poses.items():
            axis_z = 1.0 - 2.0 * (x * x + y * y)  # the marker normal's world z
            out[name] = float(np.degrees(np.arccos(np.clip(axis_z, -1.0, 1.0))))
        return out

    face_up = tilts(tracked(image))
    best_fit = tilts(tracked(image, prefer_normal=None))
    assert max(face_up.values()) < 15.0, face_up
    assert max(best_fit.values()) > 30.0, f"no marker here shows the ambiguity: {best_fit}"


def test_the_label_colours_still_locate_the_standards_on_the_front_camera(backend):
    instance = instances()[1]
    backend.load(instance)
    seen = estimate_scene(backend.render("front"), world_camera_calibration("front", 240, 320, weighing_cell()))
    for name in ("std_10", "std_20", "std_50", "std_100"):
        assert name in seen.standards, f"{name} not found by its label colour"
        error = np.linalg.norm(np.asarray(seen.standards[name][:2]) - backend.data.body(name).xpos[:2])
        assert error < 0.006, f"{name}: {error:.4f} m"


def test_the_ordinary_scene_has_no_marker_camera():
    plain = MujocoBackend(RenderSettings(width=64, height=48))
    try:
        plain.load(instances()[0])
        with pytest.raises(ValueError, match="unknown camera 'overhead'"):
            plain.render(MARKER_CAMERA)
        assert not any(plain.model.material(i).name.startswith("marker_") for i in range(plain.model.nmat))
    finally:
        plain.close()
