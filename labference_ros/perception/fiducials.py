"""Fiducial markers (OpenCV ArUco) on calibrated cameras: object poses as a real
cell measures them, for the sensor-only world estimator
(tasks/weighing/sensor_estimator.py).

A marker's pose comes from its four corners (cv2.aruco detection, then
cv2.solvePnP with the square-marker solver) in the camera frame, turned into the
world frame with the camera's calibration from the cell description. The marker
frame: origin at the marker's centre, z out of its printed face, x to the
right of the printed image, y up it.
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from labference_ros.perception.vision import CameraCalibration

DICTIONARY = cv2.aruco.DICT_4X4_50
# OpenCV's camera frame (x right, y down, z forward) in the calibration's (MuJoCo:
# x right, y up, looking along -z).
_CV_TO_CAMERA = np.diag([1.0, -1.0, -1.0])


@dataclass(frozen=True)
class MarkerPose:
    marker_id: int
    position: tuple[float, float, float]  # marker centre, world frame, metres
    rotation: tuple[float, ...]  # row-major 3x3: marker axes in the world
    reprojection_px: float  # mean corner error of the solved pose

    @property
    def normal(self) -> np.ndarray:
        """The printed face's outward normal in the world."""
        return np.asarray(self.rotation).reshape(3, 3)[:, 2]


def marker_image(marker_id: int, pixels: int, dictionary: int = DICTIONARY) -> np.ndarray:
    """The marker to print (or to texture in a simulated scene): grey levels, no quiet zone."""
    return cv2.aruco.generateImageMarker(cv2.aruco.getPredefinedDictionary(dictionary), marker_id, pixels)


AMBIGUOUS_PX = 0.5  # mean corner error: two poses this close fit the corners equally well


def _solve(square, pixels, camera, distortion, world_from_camera, prefer_normal):
    """(world rotation, translation in the camera frame, mean corner error) of the chosen pose."""
    count, rvecs, tvecs, _errors = cv2.solvePnPGeneric(square, pixels, camera, distortion,
                                                       flags=cv2.SOLVEPNP_IPPE_SQUARE)
    candidates = []
    for rvec, tvec in zip(rvecs[:count], tvecs[:count]):
        projected, _ = cv2.projectPoints(square, rvec, tvec, camera, distortion)
        error = float(np.linalg.norm(projected.reshape(4, 2) - pixels, axis=1).mean())
        camera_from_marker, _ = cv2.Rodrigues(rvec)
        candidates.append((world_from_camera @ camera_from_marker, np.asarray(tvec, float).reshape(3), error))
    if not candidates:
        return None
    best = min(c[2] for c in candidates)
    if prefer_normal is None:
        return min(candidates, key=lambda c: c[2])
    close = [c for c in candidates if c[2] <= best + AMBIGUOUS_PX]
    return max(close, key=lambda c: float(c[0][:, 2] @ np.asarray(prefer_normal, float)))


def detect_markers(image_rgb: np.ndarray, calib: CameraCalibration, marker_length_m: float | dict[int, float],
                   dictionary: int = DICTIONARY, intrinsics: tuple[np.ndarray, np.ndarray] | None = None,
                   prefer_normal: tuple[float, float, float] | None = None) -> dict[int, MarkerPose]:
    """Every marker of `dictionary` seen in the image, with its world pose. A marker
    seen twice is dropped (which one is meant cannot be told). marker_length_m: the
    printed side of every marker, or of each id (ids not in it are ignored: one
    detection pass serves markers of several sizes). `intrinsics`: the
    camera's own matrix K and distortion coefficients (OpenCV order, as camera_info's
    plumb_bob or rational_polynomial D); without them, `calib`'s pinhole (its field of
    view, the principal point at the image centre, no distortion). prefer_normal: the
    world direction the printed faces are known to face (e.g. up, markers on top faces):
    a small marker seen obliquely has two poses that fit its corners almost equally
    well (the square's tilt towards or away from the camera), and of those fitting within
    AMBIGUOUS_PX of the best the one whose normal is nearest this is taken."""
    grey = cv2.cvtColor(np.ascontiguousarray(image_rgb), cv2.COLOR_RGB2GRAY)
    parameters = cv2.aruco.DetectorParameters()
    parameters.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX  # sub-pixel corners: the pose's scale
    detector = cv2.aruco.ArucoDetector(cv2.aruco.getPredefinedDictionary(dictionary), parameters)
    corners, ids, _rejected = detector.detectMarkers(grey)
    if ids is None:
        return {}
    if intrinsics is None:
        f = calib.focal_px
        camera = np.array([[f, 0.0, calib.width / 2], [0.0, f, calib.height / 2], [0.0, 0.0, 1.0]])
        distortion = None
    else:
        camera = np.asarray(intrinsics[0], dtype=np.float64).reshape(3, 3)
        distortion = np.asarray(intrinsics[1], dtype=np.float64).reshape(-1) if len(intrinsics[1]) else None
    # Corner order of a detection: top-left, top-right, bottom-right, bottom-left of the printed image.
    unit_square = np.array([[-0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.5, -0.5, 0.0], [-0.5, -0.5, 0.0]])
    world_from_camera = np.asarray(calib.rotation).reshape(3, 3) @ _CV_TO_CAMERA
    found: dict[int, MarkerPose] = {}
    seen_twice: set[int] = set()
    for marker_corners, marker_id in zip(corners, ids.reshape(-1)):
        if isinstance(marker_length_m, dict):
            if int(marker_id) not in marker_length_m:
                continue
            square = unit_square * marker_length_m[int(marker_id)]
        else:
            square = unit_square * marker_length_m
        pixels = marker_corners.reshape(4, 2).astype(np.float64)
        solved = _solve(square, pixels, camera, distortion, world_from_camera, prefer_normal)
        if solved is None:
            continue
        rotation, translation, error = solved
        position = world_from_camera @ translation + np.asarray(calib.position)
        key = int(marker_id)
        if key in found:
            seen_twice.add(key)
        found[key] = MarkerPose(key, tuple(float(v) for v in position),
                                tuple(float(v) for v in rotation.reshape(9)), error)
    for key in seen_twice:
        del found[key]
    return found
