"""What a non-privileged weighing system should do next, from what it sees.

Pure arithmetic on public facts: the target from the instruction, the stable
display reading, the standards seen on the pan and on the table, and the
table and balance geometry of the cell. The four denominations have distinct
subset sums, so reading minus the visible standards gives the hidden sample,
and target minus sample names exactly one goal subset (paper 4.2).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from labference_ros.tasks.weighing.layout import (BALANCE, BALANCE_CLEARANCE, MIN_OBJECT_SPACING, TABLE_X,
                                        TABLE_Y)
from labference_ros.tasks.weighing.objects import STANDARD_MASSES_G, STANDARDS

SUBSET_TOLERANCE_G = 5.0  # a goal subset must explain the target to this closeness
SPOT_STEP_M = 0.01  # grid of candidate table spots for a removed standard
SPOT_ROOM_M = 0.16  # more room than this around a spot is no better


@dataclass(frozen=True)
class GoalEstimate:
    sample_g: float  # reading minus the standards seen on the pan
    goal: tuple[str, ...]  # standards that bring the reading to the target, STANDARDS order
    error_g: float  # |target - sample - mass(goal)|

    @property
    def consistent(self) -> bool:
        return self.error_g <= SUBSET_TOLERANCE_G


def _subsets():
    for k in range(len(STANDARDS) + 1):
        yield from itertools.combinations(STANDARDS, k)


def estimate_goal(target_g: float, reading_g: float, on_pan) -> GoalEstimate:
    """The goal subset implied by a stable reading with `on_pan` standards supported."""
    sample = reading_g - sum(STANDARD_MASSES_G[n] for n in on_pan)
    need = target_g - sample
    best = min(_subsets(), key=lambda s: (abs(need - sum(STANDARD_MASSES_G[n] for n in s)), len(s)))
    error = abs(need - sum(STANDARD_MASSES_G[n] for n in best))
    return GoalEstimate(sample, tuple(best), error)


def corrections(goal, on_pan) -> list[tuple[str, str]]:
    """(standard, "table" | "pan") moves from the supported set to the goal:
    removals first (they never overload the pan and free nothing the
    additions need, but keep the order fixed), then additions, each in
    STANDARDS order. Every item is in the contract's legal set U."""
    goal, on_pan = set(goal), set(on_pan)
    removals = [(n, "table") for n in STANDARDS if n in on_pan - goal]
    additions = [(n, "pan") for n in STANDARDS if n in goal - on_pan]
    return removals + additions


def _clear_of_balance(x: float, y: float, balance_xy) -> bool:
    behind, front = BALANCE.footprint_half_x
    bx, by = balance_xy
    inside_x = bx - behind - BALANCE_CLEARANCE < x < bx + front + BALANCE_CLEARANCE
    return not (inside_x and abs(y - by) < BALANCE.housing_half_y + BALANCE_CLEARANCE)


def free_table_spot(balance_xy, occupied) -> tuple[float, float] | None:
    """A reachable table spot for a removed standard, or None if the table is
    full. Spots must be clear of the balance and at least the finger
    clearance from every occupied point (standards seen on the table); among
    them, more room wins up to SPOT_ROOM_M, then nearness to the middle of
    the table half away from the balance (comfortably inside the reach).
    Deterministic."""
    side = -1.0 if balance_xy[1] > 0 else 1.0
    middle = (0.5 * (TABLE_X[0] + TABLE_X[1]), side * 0.5 * (TABLE_Y[1] - TABLE_Y[0]) / 2)
    best, best_key = None, None
    nx = int(round((TABLE_X[1] - TABLE_X[0]) / SPOT_STEP_M))
    ny = int(round((TABLE_Y[1] - TABLE_Y[0]) / SPOT_STEP_M))
    for i in range(nx + 1):
        x = TABLE_X[0] + i * SPOT_STEP_M
        for j in range(ny + 1):
            y = TABLE_Y[0] + j * SPOT_STEP_M
            if not _clear_of_balance(x, y, balance_xy):
                continue
            room = min((math.dist((x, y), p[:2]) for p in occupied), default=math.inf)
            if room < MIN_OBJECT_SPACING:
                continue
            key = (-round(min(room, SPOT_ROOM_M), 6), round(math.dist((x, y), middle), 6))
            if best_key is None or key < best_key:
                best, best_key = (round(x, 4), round(y, 4)), key
    return best
