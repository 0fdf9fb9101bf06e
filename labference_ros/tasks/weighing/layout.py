"""Weighing-scene layout from the layout seed (paper 8.3): where the balance,
the four standards and the sample stand. Pure Python so the evaluator can
regenerate and hash a layout without a simulator.

Frame: world, metres; the robot base is at the origin on the table top (z=0),
+x points away from the robot. Grasps are top-down with the fingers closing
along world y, so neighbours must leave room for the fingers along y.
"""
from __future__ import annotations

import math
import random

from labference_ros.cell.description import weighing_cell
from labference_ros.tasks.weighing.objects import SAMPLE, STANDARDS

# Balance housing, pan and pan slots: fixture geometry from the cell description.
BALANCE = weighing_cell().balance
LAYOUT_VERSION = "weighing-layout-v1"

# Reachable table region for top-down grasps (Panda, base at origin).
TABLE_X = (0.34, 0.62)
TABLE_Y = (-0.34, 0.34)
MIN_OBJECT_SPACING = 0.11  # finger clearance between standards on the table
BALANCE_CLEARANCE = 0.07  # from a standard's centre to the housing edge


def pan_slot(name: str, balance_xy: tuple[float, float]) -> tuple[float, float]:
    """Where standard `name` sits on the pan (fixed per standard so the
    supported set can be read from positions as well as from contacts)."""
    return BALANCE.slot_xy(STANDARDS.index(name), balance_xy)


def start_places(instance) -> dict[str, tuple[float, float, float]]:
    """Where each object stands when the episode starts: (x, y, height of the surface
    under it). The sample and the standards the instance puts on the pan stand on
    the pan (the standards at their slots); the others on the table."""
    cell = weighing_cell()
    balance_xy = tuple(instance.layout["balance"])
    places = {}
    for name in STANDARDS:
        if name in instance.initial_on_pan:
            places[name] = (*pan_slot(name, balance_xy), BALANCE.pan_top_z)
        else:
            places[name] = (*instance.layout[name], cell.table.top_z)
    places[SAMPLE] = (*instance.layout[SAMPLE], BALANCE.pan_top_z)
    return places


def generate_layout(layout_seed: int) -> dict[str, tuple[float, float]]:
    """Layout seed -> {"balance": (x, y), "sample": (x, y) on the pan,
    "std_10".."std_100": (x, y) on the table}. Deterministic."""
    rng = random.Random(f"{LAYOUT_VERSION}:{layout_seed}")
    side = rng.choice((-1.0, 1.0))  # balance left or right of the robot
    bx = rng.uniform(0.48, 0.53)
    by = side * rng.uniform(0.19, 0.23)
    layout: dict[str, tuple[float, float]] = {"balance": (bx, by)}
    # The sample sits near the pan centre, clear of the four standard slots.
    jitter = 0.006
    layout[SAMPLE] = (bx + rng.uniform(-jitter, jitter), by + rng.uniform(-jitter, jitter))

    behind, front = BALANCE.footprint_half_x
    y_lo, y_hi = TABLE_Y
    # Standards go on the other half of the table from the balance.
    y_range = (y_lo, -0.04) if side > 0 else (0.04, y_hi)
    placed: list[tuple[float, float]] = []
    attempts = 0
    while len(placed) < len(STANDARDS):
        attempts += 1
        if attempts > 10000:
            raise RuntimeError(f"layout seed {layout_seed}: could not place the standards")
        p = (rng.uniform(*TABLE_X), rng.uniform(*y_range))
        if any(math.dist(p, q) < MIN_OBJECT_SPACING for q in placed):
            continue
        if (bx - behind - BALANCE_CLEARANCE < p[0] < bx + front + BALANCE_CLEARANCE
                and abs(p[1] - by) < BALANCE.housing_half_y + BALANCE_CLEARANCE):
            continue
        placed.append(p)
    rng.shuffle(placed)  # which standard gets which spot is part of the nuisance
    for name, p in zip(STANDARDS, placed):
        layout[name] = (round(p[0], 4), round(p[1], 4))
    layout["balance"] = (round(bx, 4), round(by, 4))
    layout[SAMPLE] = tuple(round(c, 4) for c in layout[SAMPLE])  # type: ignore[assignment]
    return layout
