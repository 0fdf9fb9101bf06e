"""The demonstration steps' frame clock: a frame the bag lacks between two it has
keeps its step; the period is the smallest gap, so even a short episode with a lost
frame is put back on its rate."""
from __future__ import annotations

import numpy as np
import pytest

from labference_ros.recording.demo_steps import _frame_clock, _held_image_notes


@pytest.mark.parametrize("stamps, filled", [
    ([0.0, 0.1, 0.3], [0.2]),                # three frames, one lost: a median gap would say 0.15 s
    ([0.0, 0.3, 0.4], [0.1, 0.2]),           # two lost in a row, before the only regular gap
    ([0.0, 0.1, 0.2, 0.3], []),
    ([0.5], []),
])
def test_lost_frames_between_recorded_ones_get_their_steps_back(stamps, filled):
    times, added, _period = _frame_clock(stamps)
    assert np.allclose(added, filled)
    assert np.allclose(times, sorted(stamps + filled))


def test_every_camera_that_holds_an_earlier_image_is_noted():
    times, filled, period = _frame_clock([0.0, 0.1, 0.3, 0.4])
    stamps = {"front": np.array([0.0, 0.1, 0.1, 0.3, 0.4]), "wrist": np.array([0.0, 0.1, 0.1, 0.3, 0.3]),
              "display": times.copy()}
    notes = _held_image_notes(times, filled, stamps, period)
    assert notes[0].startswith("1 front camera frame(s) missing from the bag (t = 0.200 s)")
    assert notes[1:] == ["2 step(s) of the wrist camera hold an earlier image (frames missing from the bag)"]
