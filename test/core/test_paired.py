"""Paired comparisons: the difference's interval (coverage study) and the exact tests."""
import numpy as np
import pytest
from scipy.stats import binom, norm

from labference_ros.core import paired as Q

SIZES = (3, 10, 30, 100)
# (candidate rate, reference rate, chance that a unit's two outcomes share one latent draw)
DESIGNS = [(0.0, 0.0, 0.0), (0.1, 0.1, 0.0), (0.5, 0.5, 0.0), (0.9, 0.9, 0.5), (1.0, 1.0, 0.0),
           (0.1, 0.5, 0.2), (0.9, 0.1, 0.0), (1.0, 0.5, 0.0), (0.0, 0.1, 0.0), (0.3, 0.7, 0.5), (0.5, 0.5, 0.8)]
FLOOR = 0.93


def _outcomes(rng, shape, p1, p2, shared):
    u = rng.random(shape)
    v = np.where(rng.random(shape) < shared, u, rng.random(shape))
    return u < p1, v < p2


@pytest.mark.parametrize("n", SIZES)
def test_bonett_price_coverage_for_independent_units(n):
    rng = np.random.default_rng(240926)
    replications = 20000
    low = {}
    for p1, p2, shared in DESIGNS:
        y1, y2 = _outcomes(rng, (replications, n), p1, p2, shared)
        b, c = (y1 & ~y2).sum(axis=1), (~y1 & y2).sum(axis=1)
        lo, hi = Q.bonett_price_arrays(b, c, np.full(replications, n))
        cover = float(((lo <= p1 - p2 + 1e-12) & (p1 - p2 - 1e-12 <= hi)).mean())
        if cover < FLOOR:
            low[(p1, p2, shared)] = cover
    assert low == {}


def test_clustered_difference_coverage():
    """Families of three units sharing a family effect on both arms' success (probit scale)."""
    rng = np.random.default_rng(240926)
    replications = 600
    low = {}
    for families in (3, 10, 30):
        for p1, p2 in ((0.5, 0.5), (0.8, 0.5), (0.9, 0.9)):
            shift = rng.normal(0, 1.0, size=(replications, families, 1))  # the family's difficulty
            y1 = rng.random((replications, families, 3)) < norm.cdf(norm.ppf(p1) * np.sqrt(2) + shift)
            y2 = rng.random((replications, families, 3)) < norm.cdf(norm.ppf(p2) * np.sqrt(2) + shift)
            hits = 0
            for a, b in zip(y1, y2):
                r = Q.paired_difference([list(zip(x, y)) for x, y in zip(a, b)], with_test=False)
                hits += r["lo"] <= p1 - p2 + 1e-12 and p1 - p2 - 1e-12 <= r["hi"]
            if hits / replications < FLOOR:
                low[(families, p1, p2)] = hits / replications
    assert low == {}


def test_mcnemar_exact_is_the_binomial_test_on_discordant_units():
    assert Q.mcnemar_exact(0, 6) == pytest.approx(2 / 64)
    assert Q.mcnemar_exact(3, 3) == 1.0 and Q.mcnemar_exact(0, 0) == 1.0
    assert Q.mcnemar_exact(2, 9) == pytest.approx(2 * binom.cdf(2, 11, 0.5))


def test_sign_flips_of_single_units_are_mcnemar():
    diffs = [1] * 2 + [-1] * 9 + [0] * 20
    assert Q.sign_flip_p_value(diffs)["p_value"] == pytest.approx(Q.mcnemar_exact(2, 9))


def test_sign_flips_over_many_clusters_fall_back_to_a_seeded_monte_carlo():
    diffs = [1, 2, -1, 3, 1, 1, 2, -2, 1, 1, 3, 1, 2, 1, 1, 2, 1, 3, 2]
    a, b = Q.sign_flip_p_value(diffs), Q.sign_flip_p_value(diffs)
    assert a == b and a["method"] == "sign_flip_monte_carlo" and 0 < a["p_value"] < 0.01


def test_paired_difference_counts_and_tests():
    units = [[(1, 0)]] * 6 + [[(1, 1)]] * 4
    r = Q.paired_difference(units)
    assert (r["n"], r["candidate_only"], r["reference_only"], r["both"]) == (10, 6, 0, 4)
    assert r["estimate"] == pytest.approx(0.6) and r["lo"] > 0 and r["test"] == "mcnemar_exact"
    assert r["p_value"] == pytest.approx(2 / 64)


def test_agreeing_arms_leave_a_non_degenerate_interval():
    r = Q.paired_difference([[(1, 1)]] * 3)
    assert r["estimate"] == 0 and r["lo"] < -0.4 and r["hi"] > 0.4 and r["p_value"] == 1.0


def test_clusters_use_the_permutation_test_and_count_once_when_they_agree():
    families = [[(1, 0), (1, 0)], [(1, 0), (1, 0)], [(1, 0), (1, 0)]]
    r = Q.paired_difference(families)
    assert r["test"] == "sign_flip_exact" and r["p_value"] == pytest.approx(2 / 8)
    assert r["effective_n"] == 3  # no variance between families: one unit per family
    single = Q.paired_difference([[u] for f in families for u in f])
    assert single["p_value"] < r["p_value"] and single["hi"] - single["lo"] < r["hi"] - r["lo"]
