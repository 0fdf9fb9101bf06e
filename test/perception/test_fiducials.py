"""ArUco markers on the cell's calibrated front camera (perception/fiducials.py):
a marker rendered on the table at a known pose is found with its id, its face's
normal and its position, at the accuracy stated in docs/real-rig.md."""
from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")

import cv2  # noqa: E402
import mujoco  # noqa: E402

from labference_ros.cell.description import weighing_cell  # noqa: E402
from labference_ros.perception.camera import world_camera_calibration  # noqa: E402
from labference_ros.perception.fiducials import detect_markers, marker_image  # noqa: E402
from labference_ros.tasks import family  # noqa: E402

MARKER_M = 0.04
CENTRE = (0.45, 0.05, 0.002)  # the printed face, on the table


def render_front(height: int, width: int, marker_id: int = 7) -> np.ndarray:
    weighing = family("feedback_weighing")
    instance = weighing.generate("basic", 1, task_seed=2, layout_seed=2, policy_seed=0)[0]
    spec = weighing.build_scene(instance).spec
    spec.visual.global_.offwidth, spec.visual.global_.offheight = max(width, 640), max(height, 480)
    inner, border = 120, 20  # pixels of the marker and of its white quiet zone
    grey = cv2.copyMakeBorder(marker_image(marker_id, inner), border, border, border, border,
                              cv2.BORDER_CONSTANT, value=255)
    texture = spec.add_texture(name="marker", type=mujoco.mjtTexture.mjTEXTURE_2D, width=grey.shape[1],
                               height=grey.shape[0], nchannel=3)
    texture.data = np.ascontiguousarray(np.stack([grey] * 3, axis=-1)).tobytes()
    spec.add_material(name="marker", textures=["", "marker"])
    side = MARKER_M * grey.shape[0] / inner
    board = spec.worldbody.add_body(name="marker_board", pos=[CENTRE[0], CENTRE[1], CENTRE[2] - 0.001])
    board.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[side / 2, side / 2, 0.001], material="marker",
                   contype=0, conaffinity=0)
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    renderer = mujoco.Renderer(model, height=height, width=width)
    renderer.update_scene(data, camera="front")
    image = renderer.render()
    renderer.close()
    return image


def test_a_marker_on_the_table_is_found_with_its_pose():
    image = render_front(960, 1280)
    found = detect_markers(image, world_camera_calibration("front", 960, 1280, weighing_cell()), MARKER_M)
    assert set(found) == {7}
    pose = found[7]
    assert np.linalg.norm(np.subtract(pose.position, CENTRE)) < 0.01  # metres
    assert np.degrees(np.arccos(np.clip(pose.normal[2], -1, 1))) < 2.0  # the face looks up
    assert pose.reprojection_px < 0.5


def test_at_the_default_camera_size_a_4_cm_marker_is_too_small_to_read():
    """Why the rehearsal needs larger images or markers: nothing is found, nothing is guessed."""
    image = render_front(240, 320)
    assert detect_markers(image, world_camera_calibration("front", 240, 320, weighing_cell()), MARKER_M) == {}


def test_a_marker_seen_twice_is_not_reported():
    image = render_front(960, 1280)
    calib = world_camera_calibration("front", 960, 1280, weighing_cell())
    u, v = (int(round(c)) for c in calib.project(CENTRE))
    patch = image[v - 60:v + 60, u - 60:u + 60].copy()
    doubled = image.copy()
    doubled[v - 60:v + 60, u - 360:u - 240] = patch  # the same marker once more, 300 px to the left
    assert set(detect_markers(image, calib, MARKER_M)) == {7}
    assert detect_markers(doubled, calib, MARKER_M) == {}  # which one is meant cannot be told


def test_a_cropped_image_is_read_with_the_cameras_own_matrix():
    """A camera whose principal point is off the image centre (here: the left 160 columns
    cropped away) gives a biased pose under the centred pinhole; with its camera_info
    matrix the pose is right again."""
    image = render_front(960, 1280)[:, 160:]
    calib = world_camera_calibration("front", 960, 1120, weighing_cell())
    f = calib.focal_px
    k = np.array([[f, 0.0, 640.0 - 160.0], [0.0, f, 480.0], [0.0, 0.0, 1.0]])
    centred = detect_markers(image, calib, MARKER_M)[7]
    own = detect_markers(image, calib, MARKER_M, intrinsics=(k, np.zeros(5)))[7]
    assert np.linalg.norm(np.subtract(own.position, CENTRE)) < 0.01
    assert np.linalg.norm(np.subtract(centred.position, CENTRE)) > 0.03  # 80 px off: centimetres
    assert own.reprojection_px < 0.5
