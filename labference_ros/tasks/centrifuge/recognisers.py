"""Behaviour recognisers of centrifuge loading (paper 5.3): looser than the
insertion predicate, so a choice is identified early and success is judged
strictly and separately.

  grasp      bilateral finger contact while the gripper closes, held 0.1 s (tasks/grasping.py)
  approach   the held tube's bottom within one socket's approach region (near its
             axis line, above its mouth), its axis roughly along the socket's, and
             moving into it: the first directed attempt toward that slot
  release    no robot contact on a grasped tube for 0.1 s

Pure: measurements in, recognitions out; each tracker keeps only what it needs
from the previous sample (a position, a start time).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labference_ros.core.geometry import clip_unit
from labference_ros.core.measurements import ObjectMeasurement, WorldMeasurement
from labference_ros.tasks.centrifuge.contract import CentrifugeContract
from labference_ros.tasks.centrifuge.insertion import (
    SHORTLIST_MARGIN_M,
    approximate_offsets,
    socket_offsets,
    tube_bottom,
)
from labference_ros.tasks.centrifuge.rotor import SlotFrame
from labference_ros.tasks.grasping import GraspTracker


@dataclass
class Approach:
    slot: int
    since: float


class TubeTracker:
    """Grasp, release and directed approach of one tube."""

    def __init__(self, name: str, contract: CentrifugeContract):
        self.name, self.contract = name, contract
        self.hand = GraspTracker()
        self._approach: Approach | None = None
        self._last_bottom: tuple[float, np.ndarray] | None = None
        self.approached_this_grasp: set[int] = set()

    @property
    def grasping(self) -> bool:
        return self.hand.grasping

    @property
    def attempt(self) -> int:
        return self.hand.attempt

    def step(self, m: WorldMeasurement, o: ObjectMeasurement, frames: list[SlotFrame]) -> list[dict]:
        out = []
        now = m.t
        change = self.hand.step(m, o)
        if change == "grasp":
            self.approached_this_grasp = set()
        elif change == "release":
            self._approach = None
        if change is not None:
            out.append({"category": change, "t": now, "object": self.name, "attempt": self.attempt})
        if self.grasping:
            slot = self._approaching(now, o, frames)
            if slot is not None and slot not in self.approached_this_grasp:
                self.approached_this_grasp.add(slot)
                out.append({"category": "insertion_attempt", "t": now, "object": self.name, "slot": slot,
                            "attempt": self.attempt})
        else:
            self._last_bottom = None
        return out

    def _approaching(self, now: float, o: ObjectMeasurement, frames: list[SlotFrame]) -> int | None:
        """The slot of a sustained, directed approach, once it has held hold_s."""
        th = self.contract.approach
        bottom, down = tube_bottom(o, self.contract.tube.length_m)
        previous, self._last_bottom = self._last_bottom, (now, bottom)
        # Above the rotor the sockets' axis lines converge: of the sockets the tube could be
        # entering, the one whose axis it is nearest to (not the first in index order).
        alongs, laterals = approximate_offsets(bottom, frames)  # along < 0: above the mouth
        margin = SHORTLIST_MARGIN_M
        shortlist = [frames[j] for j in np.flatnonzero((laterals <= th.max_lateral_m + margin)
                                                       & (alongs >= -th.max_height_m - margin))]
        candidate, nearest = None, math.inf
        for f in shortlist:
            along, lateral = socket_offsets(bottom, f)
            aligned = math.degrees(math.acos(clip_unit(down @ f.axis))) <= th.max_axis_error_deg
            if lateral <= th.max_lateral_m and -th.max_height_m <= along and aligned and lateral < nearest:
                candidate, nearest = f, lateral
        descending = False
        if candidate is not None and previous is not None and now > previous[0]:
            speed = float((bottom - previous[1]) @ candidate.axis) / (now - previous[0])
            descending = speed >= th.min_descent_mps
        if candidate is None or not descending:
            self._approach = None
            return None
        if self._approach is None or self._approach.slot != candidate.index:
            self._approach = Approach(candidate.index, now)
        if now - self._approach.since >= th.hold_s - 1e-9:
            return candidate.index
        return None
