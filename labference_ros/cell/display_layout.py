"""Geometry and encoding of the balance's seven-segment readout.

Shared by the scene (which lights segment geoms) and the decoder (which reads
them back from the display camera), so the two cannot drift apart.
Panel-local frame: x along the reading direction, y up the panel, metres,
origin at the panel centre.
"""
from __future__ import annotations

import math

N_DIGITS = 5  # four integer digits and one decimal: up to 9999.9
N_DECIMALS = 1
PANEL_HALF = (0.05, 0.017)
DIGIT_PITCH = 0.015
DIGIT_W = 0.0095  # horizontal segment length + a little
DIGIT_H = 0.020
SEG_T = 0.0024  # segment thickness
# First digit centre; the stability light sits right of the last digit.
DIGIT_X0 = -0.040
LIGHT_XY = (0.0375, 0.006)
LIGHT_HALF = 0.003
# The ready lamp below it (only on a balance whose condition declares one: the
# hidden-event condition's cue, core.external_events).
READY_LAMP_XY = (0.0375, -0.006)

SEGMENT_NAMES = "abcdefg"
DIGIT_SEGMENTS = {
    "0": "abcdef", "1": "bc", "2": "abdeg", "3": "abcdg", "4": "bcfg",
    "5": "acdfg", "6": "acdefg", "7": "abc", "8": "abcdefg", "9": "abcdfg",
    "-": "g", " ": "",
}
SEGMENTS_DIGIT = {frozenset(v): k for k, v in DIGIT_SEGMENTS.items()}

SEG_ON_RGBA = (1.0, 0.12, 0.08, 1.0)
SEG_OFF_RGBA = (0.16, 0.07, 0.07, 1.0)
LIGHT_ON_RGBA = (0.1, 1.0, 0.15, 1.0)
LIGHT_OFF_RGBA = (0.06, 0.16, 0.07, 1.0)
READY_ON_RGBA = (0.1, 0.3, 1.0, 1.0)
READY_OFF_RGBA = (0.05, 0.06, 0.16, 1.0)
PANEL_RGBA = (0.02, 0.02, 0.02, 1.0)
BEZEL_RGBA = (0.85, 0.86, 0.88, 1.0)


def digit_centre(i: int) -> tuple[float, float]:
    return DIGIT_X0 + i * DIGIT_PITCH, -0.001


def segment_boxes(i: int) -> dict[str, tuple[float, float, float, float]]:
    """Segment name -> (cx, cy, half_x, half_y) in the panel frame."""
    cx, cy = digit_centre(i)
    hw, hh, t = DIGIT_W / 2, DIGIT_H / 2, SEG_T / 2
    horiz, vert = hw - t, hh / 2 - t
    return {
        "a": (cx, cy + hh - t, horiz, t),
        "b": (cx + hw - t, cy + hh / 2, t, vert),
        "c": (cx + hw - t, cy - hh / 2, t, vert),
        "d": (cx, cy - hh + t, horiz, t),
        "e": (cx - hw + t, cy - hh / 2, t, vert),
        "f": (cx - hw + t, cy + hh / 2, t, vert),
        "g": (cx, cy, horiz, t),
    }


def decimal_point_box() -> tuple[float, float, float, float]:
    """The point after digit N_DIGITS - N_DECIMALS - 1 (always lit)."""
    cx, cy = digit_centre(N_DIGITS - N_DECIMALS - 1)
    return cx + DIGIT_PITCH / 2, cy - DIGIT_H / 2 + SEG_T / 2, SEG_T / 2, SEG_T / 2


def display_text(displayed_g: float) -> str:
    """The characters shown, one per digit: right-aligned, one decimal;
    all dashes when the value is not finite or does not fit."""
    dashes = "-" * N_DIGITS
    if displayed_g is None or not math.isfinite(displayed_g):
        return dashes
    tenths = round(displayed_g * 10 ** N_DECIMALS)
    if tenths == 0:
        tenths = 0  # no "-0.0"
    digits = f"{abs(tenths):0{N_DECIMALS + 1}d}"
    text = ("-" if tenths < 0 else "") + digits
    if len(text) > N_DIGITS:
        return dashes
    return text.rjust(N_DIGITS)


def text_value(text: str) -> float | None:
    """Inverse of display_text; None for the all-dash error display."""
    if set(text) == {"-"} or not text.strip():
        return None
    body = text.strip()
    sign = -1.0 if body.startswith("-") else 1.0
    digits = body.lstrip("-")
    if not digits.isdigit():
        return None
    return sign * int(digits) / 10 ** N_DECIMALS
