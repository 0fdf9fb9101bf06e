"""Paired comparison of two systems (or two supports) on the same task units.

Each unit (instance and repeat) gives one binary outcome per arm, (y_candidate,
y_reference); units are grouped in clusters (a pair's two members, a task
family) that are independent of each other. For the difference of the two
rates (candidate - reference):

* interval: Bonett & Price's adjusted Wald interval for a paired difference
  (Bonett & Price 2012, J. Educ. Behav. Stat. 37:479): one pseudo-observation
  added to each discordant cell, two to n, then Wald; where clusters hold
  several units, the counts are divided by the design effect of the mean difference
  (cluster-robust over unit-level variance, widened by (t_{G-1}/z)^2, within
  [1, n/G]; n/G, one unit per cluster, when the clusters carry no variance),
  as for single rates (core/proportions.py);
* exact test of "no difference": McNemar's exact (binomial) test on the
  discordant units when every cluster is one unit (McNemar 1947); otherwise
  the sign-flip permutation test over clusters (Fisher's randomisation test:
  under the null the arm labels are exchangeable within each unit, so every
  cluster's summed difference is as likely negated). With one unit per cluster
  the two tests coincide.

Pure: numpy and scipy only.
"""
from __future__ import annotations

import numpy as np

from .proportions import CONFIDENCE, t_value, z_value

EXACT_ENUMERATION_MAX = 16  # clusters with a nonzero difference enumerated exactly (2^16 sign patterns)
PERMUTATION_DRAWS = 20000
PERMUTATION_SEED = 240926


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: b and c are the discordant counts
    (candidate only right, reference only right)."""
    from scipy.stats import binom

    n = int(b) + int(c)
    if n == 0:
        return 1.0
    return float(min(1.0, 2 * binom.cdf(min(b, c), n, 0.5)))


def sign_flip_p_value(cluster_differences, draws: int = PERMUTATION_DRAWS, seed: int = PERMUTATION_SEED) -> dict:
    """Two-sided p-value of the summed difference under random sign flips of whole
    clusters; exact enumeration up to EXACT_ENUMERATION_MAX nonzero clusters, else
    a Monte Carlo estimate (p = (1 + hits) / (1 + draws), valid at any draw count)."""
    d = np.array([float(x) for x in cluster_differences if x != 0])
    observed = abs(float(d.sum()))
    if d.size == 0:
        return {"p_value": 1.0, "method": "sign_flip_exact", "clusters_nonzero": 0}
    tol = 1e-9 * max(1.0, observed)
    if d.size <= EXACT_ENUMERATION_MAX:
        patterns = ((np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1) * 2 - 1
        stats = np.abs(patterns @ d)
        return {"p_value": float((stats >= observed - tol).mean()), "method": "sign_flip_exact",
                "clusters_nonzero": int(d.size)}
    rng = np.random.default_rng(seed)
    signs = rng.choice([-1.0, 1.0], size=(draws, d.size))
    hits = int((np.abs(signs @ d) >= observed - tol).sum())
    return {"p_value": (1 + hits) / (1 + draws), "method": "sign_flip_monte_carlo", "draws": draws, "seed": seed,
            "clusters_nonzero": int(d.size)}


def bonett_price_arrays(b, c, n, confidence: float = CONFIDENCE):
    """Bonett & Price's adjusted Wald interval for the paired difference p1 - p2
    (arrays): b units where only the first is right, c only the second, n units
    (counts may be effective, non-integer). One pseudo-observation is added to
    each discordant cell and two to n; NaN where n <= 0."""
    b, c, n = (np.asarray(x, dtype=float) for x in (b, c, n))
    z = z_value(confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        p12 = (b + 1) / (n + 2)
        p21 = (c + 1) / (n + 2)
        diff = p12 - p21
        half = z * np.sqrt(np.clip(p12 + p21 - diff * diff, 0, None) / (n + 2))
        lo, hi = np.clip(diff - half, -1.0, 1.0), np.clip(diff + half, -1.0, 1.0)
    bad = ~(n > 0)
    return np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)


def bonett_price(b: float, c: float, n: float, confidence: float = CONFIDENCE) -> tuple[float | None, float | None]:
    if n <= 0:
        return None, None
    lo, hi = bonett_price_arrays(b, c, n, confidence)
    return float(lo), float(hi)


def _difference_design_effect(clusters: list[list[tuple[int, int]]], confidence: float) -> float:
    """Design effect of the mean paired difference over clusters (see module docstring)."""
    diffs = [[y1 - y2 for y1, y2 in cl] for cl in clusters]
    n = sum(len(c) for c in diffs)
    g = len(diffs)
    if g == n:
        return 1.0  # one unit per cluster: independent units
    mean = sum(sum(c) for c in diffs) / n
    unit_var = sum((x - mean) ** 2 for c in diffs for x in c) / (n * n)
    cluster_var = g / (g - 1) * sum((sum(c) - mean * len(c)) ** 2 for c in diffs) / (n * n) if g > 1 else 0.0
    if g < 2 or unit_var <= 0 or cluster_var <= 1e-15 * unit_var:
        return n / g
    widen = (t_value(g - 1, confidence) / z_value(confidence)) ** 2
    return min(max(cluster_var / unit_var, 1.0) * widen, n / g)


def paired_difference(clusters, confidence: float = CONFIDENCE, with_test: bool = True) -> dict:
    """clusters: [[(y_candidate, y_reference), ...], ...] with 0/1 outcomes per unit.
    The candidate's and reference's rates, their difference with its interval, and
    (unless with_test is False) the exact test of no difference (see module docstring)."""
    clusters = [[(int(bool(x)), int(bool(y))) for x, y in cl] for cl in clusters if cl]
    units = [u for cl in clusters for u in cl]
    n = len(units)
    a = sum(1 for x, y in units if x and y)
    b = sum(1 for x, y in units if x and not y)
    c = sum(1 for x, y in units if not x and y)
    d = n - a - b - c
    out = {"n": n, "n_clusters": len(clusters), "both": a, "candidate_only": b, "reference_only": c,
           "neither": d, "candidate_k": a + b, "reference_k": a + c, "confidence": confidence}
    if n == 0:
        return {**out, "estimate": None, "lo": None, "hi": None, "method": None, "test": None, "p_value": None}
    deff = _difference_design_effect(clusters, confidence)
    single = all(len(cl) == 1 for cl in clusters)
    lo, hi = bonett_price(b / deff, c / deff, n / deff, confidence)
    out.update({"candidate_rate": (a + b) / n, "reference_rate": (a + c) / n, "estimate": (b - c) / n,
                "lo": lo, "hi": hi, "method": "bonett_price" if single else "bonett_price_design_effect",
                "design_effect": deff, "effective_n": n / deff})
    if not with_test:
        return out
    if single:
        out.update({"test": "mcnemar_exact", "p_value": mcnemar_exact(b, c)})
    else:
        flip = sign_flip_p_value([sum(x - y for x, y in cl) for cl in clusters])
        out.update({"test": flip.pop("method"), "p_value": flip.pop("p_value"), **flip})
    return out
