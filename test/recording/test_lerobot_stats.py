"""LeRobot export statistics: dataset stats merged from episode stats equal
the stats of all frames (min, max, mean, std), in LeRobot's shapes."""
import numpy as np

from labference_ros.recording.lerobot import _image_stats, _merge_stats, _numeric_stats


def test_merged_episode_stats_equal_the_stats_of_all_frames():
    rng = np.random.default_rng(1)
    parts = [rng.normal(i, 1 + i, (n, 8)) for i, n in enumerate((30, 7, 52))]
    merged = _merge_stats([_numeric_stats(p) for p in parts], [len(p) for p in parts])
    whole = np.concatenate(parts)
    assert np.allclose(merged["mean"], whole.mean(0)) and np.allclose(merged["std"], whole.std(0))
    assert np.allclose(merged["min"], whole.min(0)) and np.allclose(merged["max"], whole.max(0))
    assert merged["count"] == [len(whole)] and len(merged["q50"]) == 8


def test_image_stats_are_per_channel_in_unit_range():
    frames = np.zeros((4, 6, 5, 3), np.uint8)
    frames[..., 1] = 255
    st = _image_stats(frames)
    assert np.array(st["mean"]).shape == (3, 1, 1)
    assert np.allclose(np.array(st["mean"]).ravel(), [0.0, 1.0, 0.0]) and st["count"] == [4]
    merged = _merge_stats([st, st], [4, 4])
    assert np.array(merged["std"]).shape == (3, 1, 1) and merged["count"] == [8]
