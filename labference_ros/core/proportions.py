"""Confidence intervals for proportions that hold at small N and at 0/N and N/N.

Two situations (docs/reporting.md, *Uncertainty*):

* independent episodes (one Bernoulli outcome each): the Wilson score interval
  (Wilson 1927; Brown, Cai & DasGupta 2001), or the Clopper-Pearson exact
  interval (Clopper & Pearson 1934) when a guaranteed coverage is wanted;
* clustered outcomes (several decisions of one rollout, both members of an
  answer-changing pair, the instances of one task family): a Wilson interval
  on the effective sample size n / deff (Kish's design effect; Korn & Graubard
  1998), the design effect estimated from the between-cluster variance of the
  ratio estimator. deff is kept within [1, n / clusters]: below 1 would claim
  more information than independent outcomes give, above n / clusters more
  correlation than full agreement within clusters. When every cluster has the
  same rate (all 0 or all 1 in particular) the variance carries no information
  and the interval falls back to the worst case, one observation per cluster.

Every function is pure (numpy and scipy.stats only); a zero denominator gives
no interval (None), never a 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

CONFIDENCE = 0.95
WILSON, CLOPPER_PEARSON, WILSON_DEFF = "wilson", "clopper_pearson", "wilson_design_effect"
METHODS = (WILSON, CLOPPER_PEARSON, WILSON_DEFF)


@lru_cache(maxsize=None)
def z_value(confidence: float = CONFIDENCE) -> float:
    from scipy.stats import norm

    return float(norm.ppf(0.5 + confidence / 2))


@lru_cache(maxsize=4096)
def t_value(df: int, confidence: float = CONFIDENCE) -> float:
    from scipy.stats import t

    return float(t.ppf(0.5 + confidence / 2, df)) if df >= 1 else float("inf")


def _t_quantile(df, confidence: float):
    """Student t quantile for (arrays of) whole degrees of freedom; inf below 1."""
    df = np.asarray(df, dtype=float)
    flat = [t_value(int(x), confidence) for x in df.ravel()]
    return np.array(flat, dtype=float).reshape(df.shape)


def wilson_arrays(k, n, confidence: float = CONFIDENCE):
    """Wilson score bounds for arrays of k successes in n trials (k, n may be effective,
    non-integer); NaN where n <= 0. At 0/N and N/N the bound is the estimate exactly."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    z = z_value(confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        shrink = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / shrink
        half = z / shrink * np.sqrt(np.clip(p * (1 - p), 0, None) / n + z * z / (4 * n * n))
        lo = np.where(k <= 0, 0.0, np.clip(centre - half, 0.0, 1.0))
        hi = np.where(k >= n, 1.0, np.clip(centre + half, 0.0, 1.0))
    bad = ~(n > 0)
    return np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)


def wilson(k: float, n: float, confidence: float = CONFIDENCE) -> tuple[float | None, float | None]:
    """Wilson score interval for k successes in n trials (k and n may be effective, non-integer)."""
    if n <= 0:
        return None, None
    lo, hi = wilson_arrays(k, n, confidence)
    return float(lo), float(hi)


def clopper_pearson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float | None, float | None]:
    """Exact (Clopper-Pearson) interval: the beta quantiles; coverage at least the nominal level."""
    from scipy.stats import beta

    if n <= 0:
        return None, None
    alpha = 1 - confidence
    lo = 0.0 if k <= 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k >= n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


@dataclass(frozen=True)
class ClusteredRate:
    """A ratio of sums over clusters, with its design-effect-adjusted Wilson interval."""
    successes: float
    n: float
    clusters: int
    estimate: float | None
    design_effect: float | None
    effective_n: float | None
    lo: float | None
    hi: float | None

    def as_dict(self) -> dict:
        return {"method": WILSON_DEFF, "k": self.successes, "n": self.n, "n_clusters": self.clusters,
                "estimate": self.estimate, "design_effect": self.design_effect, "effective_n": self.effective_n,
                "lo": self.lo, "hi": self.hi}


def clustered_wilson_arrays(numerators, denominators, confidence: float = CONFIDENCE):
    """Vectorised clustered_wilson over rows: numerators and denominators are (R, G) arrays,
    one row per sample, a cluster with denominator 0 ignored. Returns (estimate, design
    effect, effective n, lo, hi), each of length R (NaN where a row has no denominator)."""
    y = np.atleast_2d(np.asarray(numerators, dtype=float))
    m = np.atleast_2d(np.asarray(denominators, dtype=float))
    present = m > 0
    y = np.where(present, y, 0.0)
    g = present.sum(axis=1).astype(float)
    n = m.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = y.sum(axis=1) / n
        binomial = p * (1 - p) / n
        residual = np.where(present, y - p[:, None] * m, 0.0)
        clustered = g / (g - 1) * (residual * residual).sum(axis=1) / (n * n)
        informative = (g >= 2) & (binomial > 0) & (clustered > 1e-15 * binomial)
        deff = np.where(informative, np.clip(clustered / binomial, 1.0, n / g), n / g)
        # A variance estimated from G clusters has G - 1 degrees of freedom: widen by
        # (t_{G-1} / z)^2, at most back to one observation per cluster.
        widen = np.where(informative, (_t_quantile(g - 1, confidence) / z_value(confidence)) ** 2, 1.0)
        deff = np.minimum(deff * widen, n / g)
        n_eff = n / deff
    lo, hi = wilson_arrays(p * n_eff, n_eff, confidence)
    return p, deff, n_eff, lo, hi


def clustered_wilson(numerators, denominators, confidence: float = CONFIDENCE) -> ClusteredRate:
    """Wilson on the effective sample size n / deff, deff = Kish's design effect of the
    ratio estimator sum(y)/sum(m) over clusters (y_c, m_c): the cluster-robust
    (linearised) variance over that of n independent Bernoulli outcomes at the same
    rate, clamped to [1, n / clusters]. Numerators may be fractional (a mean of [0, 1]
    values, e.g. SSR), for which the binomial variance is an upper bound. No
    information on the design effect (one cluster, the estimate at 0 or 1, or every
    cluster at one rate): deff = n / clusters, one observation per cluster, the worst case."""
    y = [float(v) for v in numerators]
    m = [float(d) for d in denominators]
    k, n, g = sum(y), sum(m), sum(1 for d in m if d > 0)
    if n <= 0:
        return ClusteredRate(k, n, g, None, None, None, None, None)
    p, deff, n_eff, lo, hi = (float(a[0]) for a in clustered_wilson_arrays([y], [m], confidence))
    return ClusteredRate(k, n, g, p, deff, n_eff, lo, hi)


def interval(k: int, n: int, method: str = WILSON, confidence: float = CONFIDENCE) -> dict:
    """One independent-outcome interval as a dict (method, k, n, estimate, lo, hi)."""
    if method == WILSON:
        lo, hi = wilson(k, n, confidence)
    elif method == CLOPPER_PEARSON:
        lo, hi = clopper_pearson(k, n, confidence)
    else:
        raise ValueError(f"unknown interval method {method!r}; one of {WILSON}, {CLOPPER_PEARSON}")
    return {"method": method, "k": k, "n": n, "estimate": None if n <= 0 else k / n, "lo": lo, "hi": hi}


def format_count(k, n) -> str:
    """k/N with k shown whole when it is (SSR numerators are sums of fractions)."""
    if k is None or n is None:
        return "n/a"
    kk = int(k) if float(k).is_integer() else round(float(k), 2)
    return f"{kk}/{int(n) if float(n).is_integer() else n}"
