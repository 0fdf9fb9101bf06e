"""lab_sim takes balance readings at camera frames (nodes/sampled.py): which it keeps."""
from __future__ import annotations

from types import SimpleNamespace

from labference.msg import BalanceReading

from labference_ros.nodes.lab_sim import LabSim

MS = 1_000_000


def reading(stamp_ms: int, grams: float) -> BalanceReading:
    msg = BalanceReading(displayed_g=grams, stable=True, valid=True)
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ms * MS, 1_000_000_000)
    return msg


def timeline(now_ms: int, start_ms: int = 0, sent: dict | None = None) -> SimpleNamespace:
    """The state note_reading looks at: a loaded scene at sim time now_ms, and when (wall
    ns) this timeline's wrenches went out, by stamp."""
    return SimpleNamespace(loaded=True, timeline_start_ns=start_ms * MS, readings={},
                           backend=SimpleNamespace(sim_time=now_ms / 1000), wrench_sent_ns=sent or {})


def test_a_reading_of_this_timeline_is_kept_with_what_the_display_shows():
    sim = timeline(500, sent={480 * MS: 1_000})
    LabSim.note_reading(sim, reading(480, 12.5), published_ns=2_000)
    assert sim.readings == {480 * MS: (12.5, True)}


def test_a_reading_published_before_this_timelines_wrench_of_its_stamp_is_dropped():
    # Restored to 400 ms: the old timeline's reading of 480 ms, still in flight then, is
    # taken at a frame after this timeline sent its own 480 ms wrench.
    sim = timeline(500, start_ms=400, sent={480 * MS: 5_000})
    LabSim.note_reading(sim, reading(480, 99.0), published_ns=4_000)
    assert sim.readings == {}
    LabSim.note_reading(sim, reading(480, 12.5), published_ns=6_000)
    assert sim.readings == {480 * MS: (12.5, True)}


def test_readings_stamped_outside_the_timeline_are_dropped_whatever_their_time():
    sim = timeline(500, start_ms=400)
    LabSim.note_reading(sim, reading(390, 1.0), published_ns=0)  # before the restore point
    LabSim.note_reading(sim, reading(510, 1.0), published_ns=0)  # ahead of sim time
    assert sim.readings == {}
