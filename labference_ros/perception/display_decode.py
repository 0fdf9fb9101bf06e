"""Read the balance's seven-segment readout and stability light from the
`display` camera image with plain OpenCV (no OCR model).

Steps: find the dark display panel, map the known segment layout
(display_layout) into its bounding box, and call a segment lit when its
centre is bright LED red (or green for the light).
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from labference_ros.cell import display_layout as dl


@dataclass(frozen=True)
class DisplayReading:
    text: str  # one character per digit, "?" for an unknown pattern
    value: float | None  # None for dashes or an unreadable display
    stable: bool
    ok: bool
    reason: str = ""
    ready_lamp: bool = False  # the blue ready lamp below the stability light is lit


def find_panel(image: np.ndarray) -> tuple[int, int, int, int] | None:
    """Bounding box (x, y, w, h) of the dark panel: the largest dark blob
    that is wider than tall and near the panel's aspect ratio."""
    hsv = cv2.cvtColor(image, cv2.COLOR_RGB2HSV)
    dark = (hsv[:, :, 2] < 70).astype(np.uint8)
    # Lit segments are bright; close over them so the panel is one blob.
    dark = cv2.morphologyEx(dark, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))
    contours, _ = cv2.findContours(dark, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    want = dl.PANEL_HALF[0] / dl.PANEL_HALF[1]
    best = None
    for c in contours:
        x, y, w, h = cv2.boundingRect(c)
        if w < 20 or h < 6:
            continue
        if not 0.6 * want <= w / h <= 1.5 * want:
            continue
        if best is None or w * h > best[2] * best[3]:
            best = (x, y, w, h)
    return best


def _to_pixel(box, px, py, pw, ph):
    """Panel-local box (cx, cy, hx, hy) -> pixel centre and half sizes."""
    hx, hy = dl.PANEL_HALF
    cx, cy, sx, sy = box
    u = px + (cx + hx) / (2 * hx) * pw
    v = py + (hy - cy) / (2 * hy) * ph
    return u, v, sx / (2 * hx) * pw, sy / (2 * hy) * ph


def _lit(image, box, panel, colour: str) -> bool:
    u, v, su, sv = _to_pixel(box, *panel)
    # Sample the inner part of the segment only: neighbours stay outside.
    ru, rv = max(0, int(su * 0.5)), max(0, int(sv * 0.5))
    x0, x1 = int(round(u)) - ru, int(round(u)) + ru + 1
    y0, y1 = int(round(v)) - rv, int(round(v)) + rv + 1
    patch = image[max(0, y0):y1, max(0, x0):x1].astype(np.int32)
    if patch.size == 0:
        return False
    r, g, b = patch[..., 0], patch[..., 1], patch[..., 2]
    if colour == "red":
        on = (r > 120) & (r > 2 * g) & (r > 2 * b)
    elif colour == "blue":
        on = (b > 120) & (b > 2 * r) & (b > 1.5 * g)
    else:
        on = (g > 120) & (g > 2 * r) & (g > 2 * b)
    return bool(on.mean() >= 0.5)


def decode_display(image: np.ndarray) -> DisplayReading:
    """Decode an RGB HxWx3 uint8 image from the `display` camera."""
    if image.ndim != 3 or image.shape[2] != 3:
        return DisplayReading("", None, False, False, "expected an HxWx3 RGB image")
    panel = find_panel(image)
    if panel is None:
        return DisplayReading("", None, False, False, "display panel not found")
    chars = []
    for i in range(dl.N_DIGITS):
        lit = frozenset(s for s, box in dl.segment_boxes(i).items() if _lit(image, box, panel, "red"))
        chars.append(dl.SEGMENTS_DIGIT.get(lit, "?"))
    text = "".join(chars)
    lx, ly = dl.LIGHT_XY
    stable = _lit(image, (lx, ly, dl.LIGHT_HALF, dl.LIGHT_HALF), panel, "green")
    rx, ry = dl.READY_LAMP_XY
    ready = _lit(image, (rx, ry, dl.LIGHT_HALF, dl.LIGHT_HALF), panel, "blue")
    if "?" in text:
        return DisplayReading(text, None, stable, False, "unknown segment pattern", ready)
    value = dl.text_value(text)
    return DisplayReading(text, value, stable, True, "" if value is not None else "error display", ready)
