"""Sim and real together: a prediction-powered estimate of real success (PPI++).

Setting (the pilot): every instance of a registered list ran in simulation (or
in a rehearsal), giving a binary outcome f_i; a few of them, chosen at random,
also ran on the real rig, giving y_i. The real success rate theta = E[Y] is
estimated from the n paired instances (y_i, f_i) and the N instances with a
simulated outcome only (f~_j):

    theta_hat = lambda * mean(f~) + mean(y - lambda * f)

lambda = 0 is the real-only mean; lambda = 1 is prediction-powered inference
(Angelopoulos, Bates, Fannjiang, Jordan & Zrnic 2023, Science 382:669): the
simulator's rate on many instances, corrected by the rectifier mean(y - f)
measured where both ran. PPI++ (Angelopoulos, Duchi & Zrnic 2023,
arXiv:2311.01453) tunes lambda = cov(y, f) / ((1 + n/N) var(f)), clipped to
[0, 1], which never does worse than the real-only mean asymptotically: a
simulator that disagrees with the rig gets a small lambda, not a biased
answer. The interval is theta_hat +- t_{n-1} * se, with

    se^2 = lambda^2 var(f~) / N + var(y - lambda f) / n,

clipped to [0, 1]; t (not z) because the rectifier's variance comes from n
pairs, and one pseudo pair each way, (real 1, sim 0) and (real 0, sim 1),
joins the paired set before lambda, the rectifier and its variance are
computed (as Agresti & Caffo 2000 add pseudo-observations): without it the
tuned interval undercovers at n <= 20. Assumptions: the real instances are a uniformly random subset
of the registered list (chosen before any outcome is seen), the simulated-only
instances come from the same list, and every instance's simulated outcome is
recorded whatever it is. No assumption on how well sim predicts real: the
rectifier absorbs any bias; a poor simulator only widens the interval.
With fewer than two real or simulated-only instances the interval is the
real-only Wilson interval (core/proportions.py).
"""
from __future__ import annotations

import numpy as np

from .proportions import CONFIDENCE, t_value, wilson


def prediction_powered(real, sim_paired, sim_only, confidence: float = CONFIDENCE, tune: bool = True) -> dict:
    """real, sim_paired: outcomes of the n instances run in both (same order);
    sim_only: outcomes of the N instances run in simulation only. 0/1 or bool."""
    y = np.asarray(real, dtype=float)
    f = np.asarray(sim_paired, dtype=float)
    g = np.asarray(sim_only, dtype=float)
    n, big_n = len(y), len(g)
    if len(f) != n:
        raise ValueError(f"{n} real outcomes but {len(f)} paired simulated ones: pair them by instance")
    if n == 0:
        raise ValueError("no instance ran on the real rig: nothing anchors the estimate")
    real_lo, real_hi = wilson(float(y.sum()), n, confidence)
    out = {"n_real": n, "n_sim_only": big_n, "real_successes": int(y.sum()), "confidence": confidence,
           "real_only": {"estimate": float(y.mean()), "lo": real_lo, "hi": real_hi, "method": "wilson"},
           "sim_rate_paired": float(f.mean()), "sim_rate_only": float(g.mean()) if big_n else None,
           "agreement": float((y == f).mean())}
    if n < 2 or big_n < 2:
        return {**out, "method": "real_only_wilson", "lambda": 0.0, "estimate": float(y.mean()),
                "lo": real_lo, "hi": real_hi, "reason": "fewer than two real or simulated-only instances"}
    # One pseudo pair each way, (real 1, sim 0) and (real 0, sim 1), as Agresti & Caffo add
    # pseudo-observations: without it the tuned interval undercovers at n <= 20 (docs/reporting.md).
    y = np.concatenate([y, [1.0, 0.0]])
    f = np.concatenate([f, [0.0, 1.0]])
    m = len(y)
    var_f = float(np.var(np.concatenate([f, g]), ddof=1))
    lam = 1.0
    if tune:
        cov = float(np.cov(y, f, ddof=1)[0, 1])
        lam = 0.0 if var_f <= 0 else float(np.clip(cov / ((1 + m / big_n) * var_f), 0.0, 1.0))
    rectified = y - lam * f
    estimate = lam * float(g.mean()) + float(rectified.mean())
    se = float(np.sqrt(lam * lam * float(np.var(g, ddof=1)) / big_n + float(np.var(rectified, ddof=1)) / m))
    half = t_value(m - 1, confidence) * se
    return {**out, "method": "ppi++" if tune else "ppi", "lambda": lam, "estimate": float(np.clip(estimate, 0, 1)),
            "se": se, "lo": float(max(0.0, estimate - half)), "hi": float(min(1.0, estimate + half)), "reason": None}
