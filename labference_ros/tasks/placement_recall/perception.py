"""What the front camera shows of the rack and the tubes, from pixels and the camera's
calibration alone (for the non-privileged placement-recall system).

The rack is found by its border: three of its four edges have colours of their own
(green beside row A, orange beside column 1, navy beside column 4), so their pixels
give the rack's pose, the half turn included. The pose is the one whose drawn edges,
guides and floor plate (far to near, as the camera would see them) cover the most
pixels of the right edge colour and the fewest of the table's: every yaw first, then
finer. The light grey edge and the guides look like the tubes, so they only hide what
is behind them. Tubes are found by their caps: a cap above the rack is a seated
tube's (the hole under it), any other a standing tube's; the caps of tubes seen alone
in their holes then refine the pose. The heights come from the rack's calibration and
the cell, never from the simulator.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import cv2
import numpy as np

from labference_ros.cell.description import placement_cell
from labference_ros.perception.vision import CameraCalibration
from labference_ros.tasks.placement_recall.instances import CAP_COLOURS, RACK_CENTER
from labference_ros.tasks.placement_recall.rack import (
    COLUMNS,
    EDGE_RGBA,
    ROWS,
    RackGeometry,
    RackPose,
    hole_positions,
    hole_under,
)

CELL = placement_cell()
RACK = RackGeometry()
TOP_Z = RACK_CENTER[2]  # the rack's top face above the world origin (it stands on the table)
CAP_LENGTH_M = 0.012  # a cap: the tube's top 12 mm
CAP_RADIUS_M = CELL.objects["tube_target"].radius
GLARE_LEVEL = 250  # every channel at least this: the light's glare
MAX_CAP_AREAS = 4.0  # a blob larger than this many cap squares (diameter x diameter) is no cap
TUBE_LENGTH_M = CELL.objects["tube_target"].height
BOTTOM_Z = TOP_Z - RACK.depth_m - RACK.base_m
SEATED_CAP_Z = TOP_Z - RACK.depth_m + TUBE_LENGTH_M - CAP_LENGTH_M / 2
STANDING_CAP_Z = CELL.table.top_z + TUBE_LENGTH_M - CAP_LENGTH_M / 2
SEEN_EDGES = ("row_A", "col_1", "col_4")  # the edges whose colour nothing else in the cell has
EDGE_MATCH_RADIUS = 0.10  # chromaticity distance to an edge's colour
CAP_MATCH_RADIUS = 0.12  # to a cap's (a saturated cap top is 0.07 from its colour)
MIN_EDGE_PIXELS = 6
TABLE_CHROMA = np.asarray(CELL.table.rgba[:3], float) / max(CELL.table.rgba[:3])
TABLE_MATCH_RADIUS = 0.06
# The red A1 marker (rack.py) shares its colour with the red caps: red blobs this near it are no
# cap. Blobs of other colours there are caps: a seated tube's cap, 5 cm above the rack, can show
# right over the far marker (a blue cap in A3 did, and its hole was taken for free).
MARKER_COLOUR = "red"
A1_MARKER_LOCAL = np.array([-(RACK.half_size[0] - RACK.rim_m / 2), RACK.half_size[1] - RACK.rim_m / 2, 0.0])
MARKER_EXCLUSION_PX = 3.0
OUTLINE_MARGIN_M = 0.006  # a cap this near the rack's outline (by the fitted pose) is over the rack
CAP_INLIER_M = 0.005  # a lone cap this near its hole's middle (by the edges' pose) refines the pose
CAP_YAW_AGREEMENT_RAD = math.radians(3.0)
MERGED_CAP_AREAS = 1.5  # a cap component larger than this many cap squares shows more than one cap
# Coarse: every yaw this far apart; then fine: (half range, step) in position (m) and yaw
# (rad) about the best so far.
COARSE_YAW_STEP = math.radians(10.0)
SEARCH = ((0.008, 0.002, math.radians(8.0), math.radians(2.0)),
          (0.002, 0.0005, math.radians(2.0), math.radians(0.5)))


@dataclass(frozen=True)
class RackSighting:
    pose: RackPose | None  # None: the rack's edges are not seen
    seated: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # hole -> the cap's centre
    standing: tuple[tuple[float, float, float], ...] = ()  # standing tubes' body centres, largest cap first
    caps: dict[str, str] = field(default_factory=dict)  # hole or "table:<k>" -> cap colour name
    edge_pixels: int = 0  # coloured edge pixels the pose was fitted to

    def tube_centre(self, hole: str) -> np.ndarray:
        """Where a tube standing on the floor of `hole` has its centre (world), by the seen pose."""
        mouth = hole_positions(RACK, self.pose)[hole]
        return mouth + np.array([0.0, 0.0, TUBE_LENGTH_M / 2 - RACK.depth_m])

    def mouth(self, hole: str) -> np.ndarray:
        return hole_positions(RACK, self.pose)[hole]


def _corners(centre: np.ndarray, half: np.ndarray) -> np.ndarray:
    signs = np.array([(sx, sy, sz) for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
    return centre + signs * half


def _guides() -> dict[str, np.ndarray]:
    """The walls between the holes and the floor plate under them, in the rack's frame."""
    p, w, d = RACK.pitch_m, RACK.wall_m, RACK.depth_m
    inner_x, inner_y = COLUMNS * p / 2, len(ROWS) * p / 2
    half_x, half_y = RACK.half_size
    out = {"floor": _corners(np.array([0.0, 0.0, -d - RACK.base_m / 2]), np.array([half_x, half_y, RACK.base_m / 2]))}
    for k in range(1, len(ROWS)):
        out[f"guide_row{k}"] = _corners(np.array([0.0, inner_y - k * p, -d / 2]), np.array([inner_x, w / 2, d / 2]))
    for k in range(1, COLUMNS):
        out[f"guide_col{k}"] = _corners(np.array([-inner_x + k * p, 0.0, -d / 2]), np.array([w / 2, inner_y, d / 2]))
    return out


# The rack as drawn: its edges, the guides and the holes' floor, in the rack's frame.
_DRAWN = {**{name: _corners(c, h) for name, (c, h) in RACK.edge_boxes().items()}, **_guides()}
_CLASS = {name: k + 1 for k, name in enumerate(SEEN_EDGES)}  # 0: nothing, others: drawn but not scored
SCORED = tuple(_CLASS.values())


def edge_classes(image: np.ndarray) -> np.ndarray:
    """Per pixel: the index (1..) of the seen edge colour it shows, or 0."""
    img = image.astype(np.float32)
    peak = img.max(axis=2)
    chroma = img / np.maximum(peak, 1.0)[..., None]
    out = np.zeros(image.shape[:2], np.uint8)
    for name in SEEN_EDGES:
        rgb = np.asarray(EDGE_RGBA[name][:3], float)
        ref = rgb / rgb.max()
        near = (np.linalg.norm(chroma - ref, axis=2) < EDGE_MATCH_RADIUS) & (peak > 25)
        out[near] = _CLASS[name]
    return out


def table_pixels(image: np.ndarray) -> np.ndarray:
    """Pixels that show the bare table top (its colour, in any light)."""
    img = image.astype(np.float32)
    peak = img.max(axis=2)
    chroma = img / np.maximum(peak, 1.0)[..., None]
    return (np.linalg.norm(chroma - TABLE_CHROMA, axis=2) < TABLE_MATCH_RADIUS) & (peak > 40)


class _Projector:
    """Draws the rack at candidate poses into a window of the image around the rack."""

    def __init__(self, calib: CameraCalibration, window: tuple[int, int, int, int]):
        self.r = np.asarray(calib.rotation, float).reshape(3, 3)
        self.o = np.asarray(calib.position, float)
        self.f = calib.focal_px
        self.cx, self.cy = calib.width / 2, calib.height / 2
        self.u0, self.v0, self.u1, self.v1 = window

    def pixels(self, points: np.ndarray) -> np.ndarray:
        p = (points - self.o) @ self.r  # camera frame
        u = self.cx + self.f * p[:, 0] / -p[:, 2] - 0.5 - self.u0  # cv2: pixel centres at integers
        v = self.cy - self.f * p[:, 1] / -p[:, 2] - 0.5 - self.v0
        return np.stack([u, v], axis=1)

    def draw(self, pose: tuple[float, float, float]) -> np.ndarray:
        x, y, yaw = pose
        c, s = math.cos(yaw), math.sin(yaw)
        rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        centre = np.array([x, y, TOP_Z])
        canvas = np.zeros((self.v1 - self.v0, self.u1 - self.u0), np.uint8)
        parts = []
        for name, corners in _DRAWN.items():
            world = corners @ rot.T + centre
            parts.append((float(np.linalg.norm(world.mean(axis=0) - self.o)), name, world))
        parts.sort(key=lambda part: (part[1] != "floor", -part[0]))  # the floor, then far to near
        for _dist, name, world in parts:
            hull = cv2.convexHull(self.pixels(world).astype(np.float32))
            cv2.fillConvexPoly(canvas, np.round(hull * 16).astype(np.int32), _CLASS.get(name, 255), shift=4)
        return canvas


def fit_rack(image: np.ndarray, calib: CameraCalibration, guess_xy=None) -> tuple[RackPose | None, int]:
    """The rack's pose whose drawn edges best match the edge-coloured pixels, and how many
    such pixels there were; (None, n) when too few are seen."""
    classes = edge_classes(image)
    seen = classes > 0
    n_seen = int(seen.sum())
    if n_seen < MIN_EDGE_PIXELS * len(SEEN_EDGES):
        return None, n_seen
    vs, us = np.nonzero(seen)
    margin = 25
    window = (max(0, int(us.min()) - margin), max(0, int(vs.min()) - margin),
              min(calib.width, int(us.max()) + margin + 1), min(calib.height, int(vs.max()) + margin + 1))
    crop = classes[window[1]:window[3], window[0]:window[2]]
    projector = _Projector(calib, window)
    if guess_xy is None:  # where the coloured pixels are, at the rack's mid height
        guess_xy = calib.on_plane(float(us.mean()) + 0.5, float(vs.mean()) + 0.5, TOP_Z - RACK.depth_m / 2)

    table = table_pixels(image)[window[1]:window[3], window[0]:window[2]]

    def score(pose) -> int:
        drawn = projector.draw(pose)
        # Edge pixels drawn in their colour count for it, table pixels under the rack against it.
        return int(np.count_nonzero((drawn == crop) & (crop > 0))) - int(np.count_nonzero((drawn > 0) & table))

    # Coarse: every yaw, the rack slid until its drawn edges sit where the seen ones are.
    seen_centre = np.array([us.mean(), vs.mean()]) - window[:2]
    starts = []
    for yaw in np.arange(0.0, 2 * math.pi, COARSE_YAW_STEP):
        xy = np.asarray(guess_xy, float)
        for _ in range(3):
            drawn = np.argwhere(np.isin(projector.draw((xy[0], xy[1], yaw)), SCORED))
            if not len(drawn):
                break
            du, dv = seen_centre - drawn[:, ::-1].mean(axis=0)
            u, v = drawn[:, ::-1].mean(axis=0) + window[:2]
            moved_to = calib.on_plane(u + du + 0.5, v + dv + 0.5, TOP_Z)
            xy = xy + np.subtract(moved_to, calib.on_plane(u + 0.5, v + 0.5, TOP_Z))
        starts.append((score((xy[0], xy[1], yaw)), xy[0], xy[1], yaw))
    _, x, y, yaw = max(starts)
    best = np.array([x, y, yaw])
    for half_xy, step_xy, half_yaw, step_yaw in SEARCH:
        offsets_xy = np.arange(-half_xy, half_xy + step_xy / 2, step_xy)
        offsets_yaw = np.arange(-half_yaw, half_yaw + step_yaw / 2, step_yaw)
        candidates = np.array([best + (dx, dy, dyaw) for dx in offsets_xy for dy in offsets_xy
                               for dyaw in offsets_yaw])
        scores = np.array([score(c) for c in candidates])
        top = candidates[scores == scores.max()]
        # Pixels are point-sampled: the best score is a plateau; its middle is the estimate.
        yaw = math.atan2(np.sin(top[:, 2]).mean(), np.cos(top[:, 2]).mean())
        best = np.array([top[:, 0].mean(), top[:, 1].mean(), yaw])
    return RackPose((float(best[0]), float(best[1]), TOP_Z), float(best[2])), n_seen


def sight(image: np.ndarray, calib: CameraCalibration, guess_xy=None) -> RackSighting:
    """The rack's pose, which holes hold a tube (by the caps above them) and where the
    tubes standing on the table are. With tubes in the rack, the pose's position is
    refined by their caps (each tube stands in the middle of its hole), which the
    camera sees sharper than the rack's edges."""
    pose, n_edge = fit_rack(image, calib, guess_xy)
    if pose is None:
        return RackSighting(None, edge_pixels=n_edge)
    marker = calib.project(pose.matrix()[:3, :3] @ A1_MARKER_LOCAL + np.asarray(pose.center))
    blobs = [b for b in _cap_blobs(image, calib)
             if b[3] != MARKER_COLOUR or math.dist(b[:2], marker) > MARKER_EXCLUSION_PX]
    seated, alone = _seated_caps(blobs, calib, pose)
    holes = hole_positions(RACK, pose)
    inliers = {hole: cap for hole, cap in alone.items()
               if np.linalg.norm(np.asarray(cap[:2]) - holes[hole][:2]) < CAP_INLIER_M}
    if inliers:
        pose = _fit_to_caps(pose, inliers)
        seated, alone = _seated_caps(blobs, calib, pose)
    caps = {hole: colour for hole, (_cap, colour) in seated.items()}
    groups: list[list[tuple[float, float, int, str]]] = []  # one per standing tube: a cap a highlight cut in two
    for u, v, area, colour, _mask in blobs:  # largest first
        if any(_over_rack(calib, u, v, pose, z) for z in (SEATED_CAP_Z, TOP_Z, BOTTOM_Z)):
            continue  # on the rack or above it: no tube standing on the table
        width = _cap_px(calib, (*calib.on_plane(u, v, STANDING_CAP_Z), STANDING_CAP_Z))
        group = next((g for g in groups if math.hypot(u - g[0][0], v - g[0][1]) < 1.5 * width), None)
        if group is None:
            groups.append([(u, v, area, colour)])
        else:
            group.append((u, v, area, colour))
    standing = []
    for k, group in enumerate(groups):
        total = sum(a for _u, _v, a, _c in group)
        u = sum(u * a for u, _v, a, _c in group) / total
        v = sum(v * a for _u, v, a, _c in group) / total
        x, y = calib.on_plane(u, v, STANDING_CAP_Z)
        caps[f"table:{k}"] = group[0][3]
        standing.append((x, y, CELL.table.top_z + TUBE_LENGTH_M / 2))
    return RackSighting(pose, {h: cap for h, (cap, _c) in seated.items()}, tuple(standing), caps, n_edge)


def _cap_px(calib: CameraCalibration, point) -> float:
    """A cap's diameter in pixels at a point."""
    return 2 * CAP_RADIUS_M * calib.focal_px / float(np.linalg.norm(np.asarray(point) - np.asarray(calib.position)))


def cap_masks(image: np.ndarray) -> dict[str, np.ndarray]:
    """colour name -> the pixels showing a cap of that colour: nearest to it in chromaticity
    of all the cap and edge colours (the green cap is near the green edge), within the
    match radius, lit and saturated enough to tell (as vision.colour_components asks)."""
    img = image.astype(np.float32)
    peak = img.max(axis=2)
    chroma = img / np.maximum(peak, 1.0)[..., None]
    refs = {name: np.asarray(rgb, float) / max(rgb) for name, rgb in CAP_COLOURS.items()}
    edges = [np.asarray(EDGE_RGBA[e][:3], float) / max(EDGE_RGBA[e][:3]) for e in SEEN_EDGES]
    distance = {name: np.linalg.norm(chroma - ref, axis=2) for name, ref in refs.items()}
    nearest_other = np.min([np.linalg.norm(chroma - ref, axis=2) for ref in edges], axis=0)
    usable = (peak > 60) & (1.0 - chroma.min(axis=2) > 0.2)
    out = {}
    for name, d in distance.items():
        others = [distance[o] for o in distance if o != name]
        out[name] = usable & (d < CAP_MATCH_RADIUS) & (d < nearest_other) & (d < np.min(others, axis=0))
    return out


def _cap_blobs(image: np.ndarray, calib: CameraCalibration):
    """Every cap-coloured component no larger than a few caps where it is: (u, v, area,
    colour, its pixel mask), largest first (the marked region on the table is green too,
    but far larger)."""
    found = []
    glare = image.min(axis=2) >= GLARE_LEVEL  # a cap's top can show the light's glare, pure white
    for colour, mask in cap_masks(image).items():
        n, labels, stats, _cents = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
        for k in range(1, n):
            component = labels == k
            # The glare touching the cap is part of it: without it, the centre would be the side's.
            component |= glare & (cv2.dilate(component.astype(np.uint8), np.ones((3, 3), np.uint8)) > 0)
            vs, us = np.nonzero(component)
            area = len(us)
            u, v = float(us.mean()) + 0.5, float(vs.mean()) + 0.5
            x, y = calib.on_plane(u, v, STANDING_CAP_Z)
            if 2 <= area <= MAX_CAP_AREAS * _cap_px(calib, (x, y, STANDING_CAP_Z)) ** 2:
                found.append((u, v, area, colour, component))
    return sorted(found, key=lambda b: -b[2])


def _fit_to_caps(pose: RackPose, caps: dict[str, tuple]) -> RackPose:
    """The rack's pose that puts the holes under the caps seen alone (each tube stands in
    the middle of its hole): the yaw too from two caps or more (a least-squares rigid fit
    in the plane), the position alone from one."""
    local = np.array([RACK.local_hole(hole)[:2] for hole in caps])
    seen = np.array([cap[:2] for cap in caps.values()])
    yaw = pose.yaw_rad
    if len(caps) > 1:
        a, b = local - local.mean(axis=0), seen - seen.mean(axis=0)
        fitted = math.atan2(float(np.sum(a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0])), float(np.sum(a * b)))
        # Caps near each other say little about the yaw (a tube leans in its hole): the
        # edges' yaw stands unless the caps agree with it roughly.
        if abs(math.remainder(fitted - yaw, 2 * math.pi)) < CAP_YAW_AGREEMENT_RAD:
            yaw = fitted
    c, s = math.cos(yaw), math.sin(yaw)
    centre = seen.mean(axis=0) - np.array([[c, -s], [s, c]]) @ local.mean(axis=0)
    return RackPose((float(centre[0]), float(centre[1]), TOP_Z), yaw)


def _seated_caps(blobs, calib: CameraCalibration, pose: RackPose) -> tuple[dict, dict]:
    """(hole -> (cap centre, colour) for every hole a seated tube's cap is seen above,
    hole -> cap centre for those seen alone). A component as large as one cap is the cap
    of the hole under its centre; a larger one (caps the camera sees run together)
    counts a tube in every hole whose cap would show inside it."""
    seated: dict[str, tuple[tuple, str]] = {}
    alone: dict[str, tuple] = {}
    holes = hole_positions(RACK, pose)
    for u, v, area, colour, mask in blobs:
        x, y = calib.on_plane(u, v, SEATED_CAP_Z)
        if area <= MERGED_CAP_AREAS * _cap_px(calib, (x, y, SEATED_CAP_Z)) ** 2:
            hole = hole_under((x, y, SEATED_CAP_Z), RACK, pose, margin_m=RACK.wall_m / 2)
            if hole and hole not in seated:
                seated[hole] = ((x, y, SEATED_CAP_Z), colour)
                alone[hole] = (x, y, SEATED_CAP_Z)
            continue
        grown = cv2.dilate(mask.astype(np.uint8), np.ones((3, 3), np.uint8)) > 0
        for hole, mouth in holes.items():
            hu, hv = calib.project((mouth[0], mouth[1], SEATED_CAP_Z))
            inside = 0 <= int(hv) < grown.shape[0] and 0 <= int(hu) < grown.shape[1] and grown[int(hv), int(hu)]
            if inside and hole not in seated:
                seated[hole] = ((float(mouth[0]), float(mouth[1]), SEATED_CAP_Z), colour)
    return seated, alone


def _over_rack(calib: CameraCalibration, u: float, v: float, pose: RackPose, z: float) -> bool:
    """Whether the pixel's ray crosses height z within the rack's outline (grown by a
    margin for the pose's error)."""
    x, y = calib.on_plane(u, v, z)
    half_x, half_y = RACK.half_size[0] + OUTLINE_MARGIN_M, RACK.half_size[1] + OUTLINE_MARGIN_M
    c, s = math.cos(pose.yaw_rad), math.sin(pose.yaw_rad)
    dx, dy = x - pose.center[0], y - pose.center[1]
    return abs(c * dx + s * dy) <= half_x and abs(-s * dx + c * dy) <= half_y

