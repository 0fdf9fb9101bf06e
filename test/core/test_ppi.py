"""Sim + real (prediction-powered inference) on synthetic data with a known real success rate."""
import numpy as np
import pytest

from labference_ros.core.ppi import prediction_powered

# (sim success rate, P(real success | sim success), P(real success | sim failure))
WORLDS = [(0.7, 0.85, 0.2), (0.9, 0.95, 0.5), (0.5, 0.5, 0.5), (0.95, 1.0, 0.0), (0.3, 0.9, 0.05)]


def draw(rng, n, big_n, world):
    p_sim, if_success, if_failure = world
    f = rng.random(n) < p_sim
    y = np.where(f, rng.random(n) < if_success, rng.random(n) < if_failure)
    return y, f, rng.random(big_n) < p_sim


@pytest.mark.parametrize("n", [5, 10, 20, 50])
def test_coverage_of_the_known_real_rate(n):
    rng = np.random.default_rng(240926)
    low = {}
    for world in WORLDS:
        theta = world[0] * world[1] + (1 - world[0]) * world[2]
        replications = 1000
        hits = 0
        for _ in range(replications):
            r = prediction_powered(*draw(rng, n, 300, world))
            hits += r["lo"] <= theta <= r["hi"]
        if hits / replications < 0.93:
            low[world] = hits / replications
    assert low == {}


def test_a_faithful_simulator_narrows_the_interval_and_a_useless_one_is_ignored():
    rng = np.random.default_rng(7)
    widths, lams = [], []
    for _ in range(200):
        r = prediction_powered(*draw(rng, 30, 300, (0.8, 1.0, 0.0)))  # sim predicts real exactly
        widths.append((r["hi"] - r["lo"], r["real_only"]["hi"] - r["real_only"]["lo"]))
        lams.append(r["lambda"])
    assert np.mean([w[0] for w in widths]) < 0.8 * np.mean([w[1] for w in widths]) and np.mean(lams) > 0.7
    useless = [prediction_powered(*draw(rng, 30, 300, (0.5, 0.6, 0.6)))["lambda"] for _ in range(200)]
    assert np.mean(useless) < 0.2  # sim unrelated to real: the estimate leans on the real runs


def test_a_biased_simulator_is_corrected_by_the_rectifier():
    rng = np.random.default_rng(11)
    estimates = [prediction_powered(*draw(rng, 40, 2000, (0.9, 0.7, 0.1)))["estimate"] for _ in range(300)]
    assert np.mean(estimates) == pytest.approx(0.9 * 0.7 + 0.1 * 0.1, abs=0.02)  # sim says 0.9


def test_inputs_are_checked_and_tiny_samples_fall_back_to_wilson():
    with pytest.raises(ValueError, match="pair them"):
        prediction_powered([1, 0], [1], [1, 1])
    with pytest.raises(ValueError, match="no instance ran on the real rig"):
        prediction_powered([], [], [1, 1])
    r = prediction_powered([1], [1], [1, 0, 1])
    assert r["method"] == "real_only_wilson" and r["lo"] == pytest.approx(0.2065, abs=1e-3)

