import pytest

from labference_ros.core.stamped_series import StampedSeries


def test_a_measurement_gets_the_sample_of_its_own_time_not_the_newest():
    series = StampedSeries(span_s=1.0)
    for k in range(10):
        series.add(0.1 * k, f"arm{k}")
    assert series.nearest(0.33) == (pytest.approx(0.3), "arm3")
    assert series.nearest(0.4) == (pytest.approx(0.4), "arm4")  # a sample of the same instant belongs to it
    assert series.newest() == (pytest.approx(0.9), "arm9")
    assert series.nearest(5.0)[1] == "arm9"  # nothing later known: the newest


def test_before_every_kept_sample_the_oldest_is_the_best_known():
    series = StampedSeries(span_s=0.25)
    for k in range(10):
        series.add(0.1 * k, k)
    assert len(series) == 3  # 0.7, 0.8, 0.9: the span
    assert series.nearest(0.0) == (pytest.approx(0.7), 7)


def test_a_clock_that_restarts_starts_the_series_anew():
    series = StampedSeries(span_s=4.0)
    for k in range(30):
        series.add(0.1 * k, ("old", k))
    series.add(0.05, ("new", 0))
    assert series.nearest(1.0) == (0.05, ("new", 0))  # never a sample of the timeline before the reset
    assert len(series) == 1


def test_empty_and_invalid():
    assert StampedSeries(1.0).nearest(1.0) is None
    assert StampedSeries(1.0).newest() is None
    with pytest.raises(ValueError, match="span_s"):
        StampedSeries(0.0)


def test_nearest_takes_either_side_within_its_bound():
    series = StampedSeries(span_s=10.0)
    for t in (1.0, 2.0, 2.9, 6.0):
        series.add(t, t)
    assert series.nearest(2.8) == (2.9, 2.9)
    assert series.nearest(1.4) == (1.0, 1.0)
    assert series.nearest(1.5) == (2.0, 2.0)  # a tie: the later sample
    assert series.nearest(4.0, not_before=3.5) == (6.0, 6.0)  # 2.9 is nearer but too old
    assert series.nearest(9.0, not_before=6.5) is None
    assert series.nearest(0.0) == (1.0, 1.0)
