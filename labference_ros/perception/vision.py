"""Pixel-level perception for the non-privileged reference systems.

Only images and calibrated camera parameters go in: standards are found by
the colour of their printed label discs, the pan by the blue sample standing
on it, and each blob centre is back-projected onto the horizontal plane at
the height of the face it shows. Object poses never enter here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from labference_ros.cell.description import LABEL_LIFT_M, weighing_cell

# What the lab's cell description says: label colours, object shapes, the pan.
# The labelled objects are the standards; the sample carries no label.
CELL = weighing_cell()
BALANCE = CELL.balance
LABEL_COLOURS = CELL.label_colours()
STANDARDS = tuple(LABEL_COLOURS)
STANDARD_SHAPES = {name: CELL.objects[name] for name in STANDARDS}
SAMPLE_SHAPE = CELL.objects["sample"]

LABEL_LIFT = LABEL_LIFT_M  # the label disc's top above the standard's top face
# Chromaticity (rgb / max) of each blob class under the scene's lighting.
_REFERENCE = {name: np.array(rgb, float) / max(rgb) for name, rgb in LABEL_COLOURS.items()}
_REFERENCE["sample"] = np.array(SAMPLE_SHAPE.rgba[:3]) / max(SAMPLE_SHAPE.rgba[:3])
_MATCH_RADIUS = 0.12  # chromaticity distance; label cyan and sample blue are 0.2 apart


@dataclass(frozen=True)
class CameraCalibration:
    """Pinhole camera, MuJoCo convention: looks along its -z, y up."""
    width: int
    height: int
    fovy_deg: float
    position: tuple[float, float, float]  # world frame, m
    rotation: tuple[float, ...]  # row-major 3x3, camera axes in world

    @property
    def focal_px(self) -> float:
        return 0.5 * self.height / math.tan(math.radians(self.fovy_deg) / 2)

    def to_dict(self) -> dict:
        return {"width": self.width, "height": self.height, "fovy_deg": self.fovy_deg,
                "position": list(self.position), "rotation": list(self.rotation),
                "convention": "mujoco: camera looks along -z, +y up; pixel (0,0) top-left"}

    @classmethod
    def from_dict(cls, d: dict) -> "CameraCalibration":
        return cls(int(d["width"]), int(d["height"]), float(d["fovy_deg"]),
                   tuple(float(x) for x in d["position"]), tuple(float(x) for x in d["rotation"]))

    def ray(self, u: float, v: float) -> np.ndarray:
        """World direction through pixel (u, v) (continuous, pixel centres at +0.5)."""
        f = self.focal_px
        d_cam = np.array([(u - self.width / 2) / f, -(v - self.height / 2) / f, -1.0])
        return np.asarray(self.rotation).reshape(3, 3) @ d_cam

    def project(self, point) -> tuple[float, float]:
        """World point -> pixel (u, v); used by tests to check calibration."""
        R = np.asarray(self.rotation).reshape(3, 3)
        p = R.T @ (np.asarray(point, float) - np.asarray(self.position))
        f = self.focal_px
        return self.width / 2 + f * p[0] / -p[2], self.height / 2 - f * p[1] / -p[2]

    def on_plane(self, u: float, v: float, z: float) -> tuple[float, float]:
        d = self.ray(u, v)
        o = np.asarray(self.position)
        s = (z - o[2]) / d[2]
        return float(o[0] + s * d[0]), float(o[1] + s * d[1])


def classify_pixels(image: np.ndarray) -> np.ndarray:
    """Per-pixel class index into blob_classes() (-1: background)."""
    rgb = image.astype(np.float32)
    peak = rgb.max(axis=2)
    chroma = rgb / np.maximum(peak, 1.0)[..., None]
    sat = 1.0 - chroma.min(axis=2)
    names = blob_classes()
    refs = np.stack([_REFERENCE[n] for n in names])
    dist = np.linalg.norm(chroma[..., None, :] - refs[None, None], axis=3)
    best = dist.argmin(axis=2)
    ok = (dist.min(axis=2) < _MATCH_RADIUS) & (peak > 60) & (sat > 0.2)
    return np.where(ok, best, -1)


def blob_classes() -> tuple[str, ...]:
    return (*STANDARDS, "sample")


def find_blobs(image: np.ndarray, min_area: int = 2) -> dict[str, tuple[float, float, int]]:
    """Largest blob per class: name -> (u, v, area) at its pixel-area centroid."""
    labels = classify_pixels(image)
    out = {}
    for k, name in enumerate(blob_classes()):
        mask = (labels == k).astype(np.uint8)
        n, comp, stats, cents = cv2.connectedComponentsWithStats(mask, connectivity=8)
        if n <= 1:
            continue
        i = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
        area = int(stats[i, cv2.CC_STAT_AREA])
        if area >= min_area:
            out[name] = (float(cents[i][0]) + 0.5, float(cents[i][1]) + 0.5, area)
    return out


def colour_components(image: np.ndarray, rgb, min_area: int = 2,
                      match_radius: float = _MATCH_RADIUS) -> list[tuple[float, float, int]]:
    """Every blob of one printed colour, largest first: (u, v, area) at its pixel-area
    centroid. The colour is matched by chromaticity (rgb / max), as the label discs are."""
    img = image.astype(np.float32)
    peak = img.max(axis=2)
    chroma = img / np.maximum(peak, 1.0)[..., None]
    ref = np.asarray(rgb, float) / max(rgb)
    mask = ((np.linalg.norm(chroma - ref, axis=2) < match_radius) & (peak > 60)
            & (1.0 - chroma.min(axis=2) > 0.2)).astype(np.uint8)
    n, _comp, stats, cents = cv2.connectedComponentsWithStats(mask, connectivity=8)
    blobs = [(float(cents[i][0]) + 0.5, float(cents[i][1]) + 0.5, int(stats[i, cv2.CC_STAT_AREA]))
             for i in range(1, n) if stats[i, cv2.CC_STAT_AREA] >= min_area]
    return sorted(blobs, key=lambda b: -b[2])


@dataclass(frozen=True)
class SceneEstimate:
    standards: dict[str, tuple[float, float, float]]  # body centre, world m
    pan_centre: tuple[float, float] | None
    blobs: dict[str, tuple[float, float, int]]


def _labelled_standards(image: np.ndarray, calib: CameraCalibration):
    """Colour blobs of one front image, and each labelled standard's body centre
    with its label back-projected at the height of a standard standing on the table."""
    if image.shape[:2] != (calib.height, calib.width):
        raise ValueError(f"image {image.shape[:2]} does not match calibration "
                         f"{(calib.height, calib.width)}")
    blobs = find_blobs(image)
    standards = {}
    for name in STANDARDS:
        if name in blobs:
            h = STANDARD_SHAPES[name].height
            x, y = calib.on_plane(blobs[name][0], blobs[name][1], h + LABEL_LIFT)
            standards[name] = (x, y, h / 2)
    return blobs, standards


def estimate_scene(image: np.ndarray, calib: CameraCalibration) -> SceneEstimate:
    """Standards on the table and the pan centre, from one front image."""
    blobs, standards = _labelled_standards(image, calib)
    pan = None
    if "sample" in blobs:
        # The sample stands near the pan centre: a first guess, refined by
        # fitting the balance housing's silhouette.
        guess = calib.on_plane(blobs["sample"][0], blobs["sample"][1],
                               BALANCE.pan_top_z + SAMPLE_SHAPE.height / 2)
        pan = fit_balance(image, calib, guess)
    return SceneEstimate(standards, pan, blobs)


def _balance_boxes(bx: float, by: float) -> list[np.ndarray]:
    """Corners of the housing and the display ledge (as in the scene)."""
    g = BALANCE
    boxes = [((bx - g.housing_half_x, bx + g.housing_half_x), g.housing_height),
             ((bx + g.housing_half_x, bx + g.housing_half_x + g.ledge_depth), 0.03)]
    out = []
    for (x0, x1), h in boxes:
        out.append(np.array([(x, y, z) for x in (x0, x1) for y in (by - g.housing_half_y,
                             by + g.housing_half_y) for z in (0.0, h)]))
    return out


def _silhouette(calib: CameraCalibration, bx: float, by: float) -> np.ndarray:
    mask = np.zeros((calib.height, calib.width), np.uint8)
    for corners in _balance_boxes(bx, by):
        # cv2 puts pixel centres at integers; calibration at +0.5.
        pts = np.array([calib.project(c) for c in corners], np.float32) - 0.5
        hull = cv2.convexHull(pts)
        cv2.fillConvexPoly(mask, np.round(hull * 16).astype(np.int32), 1, shift=4)
    return mask.astype(bool)


def fit_balance(image: np.ndarray, calib: CameraCalibration, guess, search: float = 0.02,
                step: float = 0.001) -> tuple[float, float]:
    """Balance centre (= pan centre) whose projected housing best covers the
    bright, unsaturated housing pixels around `guess`."""
    rgb = image.astype(np.float32)
    peak = rgb.max(axis=2)
    sat = 1.0 - rgb.min(axis=2) / np.maximum(peak, 1.0)
    housing = (peak > 150) & (sat < 0.15)
    # Display, LEDs and the sample are part of the balance but not housing
    # coloured: they neither count for nor against a candidate.
    red = (rgb[..., 0] > 2 * rgb[..., 1]) & (rgb[..., 0] > 2 * rgb[..., 2])
    dark_or_coloured = (peak < 90) | red | (classify_pixels(image) >= 0)
    score_map = np.where(housing, 1, np.where(dark_or_coloured, 0, -1)).astype(np.int32)
    offsets = np.arange(-search, search + step / 2, step)
    cands = [(guess[0] + dx, guess[1] + dy) for dx in offsets for dy in offsets]
    scores = np.array([int(score_map[_silhouette(calib, *c)].sum()) for c in cands])
    # Pixels are point-sampled, so the best score is a plateau about a pixel
    # wide: its centre is the unbiased estimate.
    best = np.asarray(cands)[scores == scores.max()].mean(axis=0)
    return float(best[0]), float(best[1])


@dataclass(frozen=True)
class Arrangement:
    """Where the standards seen in one front image stand: on the pan (body
    centre at the pan height) or on the table."""
    pan_centre: tuple[float, float] | None
    on_pan: dict[str, tuple[float, float, float]]
    on_table: dict[str, tuple[float, float, float]]


def _sample_pan_guess(blobs, calib: CameraCalibration) -> tuple[float, float] | None:
    """The pan centre to within about the sample's jitter: where the sample's top is seen."""
    if "sample" not in blobs:
        return None
    return calib.on_plane(blobs["sample"][0], blobs["sample"][1],
                          BALANCE.pan_top_z + SAMPLE_SHAPE.height / 2)


def _split_by_support(blobs, standards, calib: CameraCalibration, pan_centre) -> Arrangement:
    """A label is back-projected once at the height it would have on the pan:
    if that lands inside the pan around `pan_centre`, the standard stands on
    the pan; otherwise it keeps its table-height estimate."""
    if pan_centre is None:
        return Arrangement(None, {}, dict(standards))
    cx, cy = pan_centre
    on_pan, on_table = {}, {}
    for name, xyz in standards.items():
        u, v, _ = blobs[name]
        h = STANDARD_SHAPES[name].height
        x, y = calib.on_plane(u, v, BALANCE.pan_top_z + h + LABEL_LIFT)
        if math.hypot(x - cx, y - cy) <= BALANCE.pan_radius:
            on_pan[name] = (x, y, BALANCE.pan_top_z + h / 2)
        else:
            on_table[name] = xyz
    return Arrangement(pan_centre, on_pan, on_table)


def estimate_arrangement(image: np.ndarray, calib: CameraCalibration,
                         pan_centre: tuple[float, float] | None = None) -> Arrangement:
    """Standards on the pan and on the table, from one front image. The pan
    centre is fitted to the balance housing unless a known one is passed
    (the balance does not move during an episode); without a pan centre
    nothing is placed on the pan."""
    if pan_centre is None:
        scene = estimate_scene(image, calib)
        return _split_by_support(scene.blobs, scene.standards, calib, scene.pan_centre)
    scene = estimate_scene_without_pan(image, calib)
    return _split_by_support(scene.blobs, scene.standards, calib, pan_centre)


def estimate_scene_without_pan(image: np.ndarray, calib: CameraCalibration) -> SceneEstimate:
    """estimate_scene without the housing fit (the costly part): the pan
    centre is only the sample's position, good to about a centimetre."""
    blobs, standards = _labelled_standards(image, calib)
    return SceneEstimate(standards, _sample_pan_guess(blobs, calib), blobs)


def quick_standards_on_pan(image: np.ndarray, calib: CameraCalibration) -> frozenset:
    """Which standards stand on the pan, judged around the sample (no housing
    fit): the pan is 9 cm in radius and the sample within a centimetre of
    its centre, while table standards stand well away from the balance."""
    scene = estimate_scene_without_pan(image, calib)
    return frozenset(_split_by_support(scene.blobs, scene.standards, calib, scene.pan_centre).on_pan)
