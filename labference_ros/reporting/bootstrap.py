"""Cluster bootstrap over episodes, matched pairs or task families (numpy only).

Resampling units are clusters, never single decisions: every decision of one
rollout belongs to its episode, both members of an answer-changing pair share a
cluster at the pair level and above, and a task family keeps all its pairs,
repeats and branches together. Clusters are the connected components of these
links, so a pair is never split whatever the level.

Every metric is a ratio of sums (numerator, denominator) over episodes, so one
draw is a weighted sum of per-cluster contributions; all metrics of one cell
share the same draws. 2,000 draws, seed 240926 (protocol), percentile 95 % CI.

A proportion gets its interval from the same clusters by a method that holds
at small N and at 0/N and N/N (`rate_interval`: Wilson for one-outcome
clusters, the design-effect-adjusted Wilson otherwise, core/proportions.py);
the percentile bootstrap, which collapses to zero width when every cluster
agrees, is kept beside it for reference.
"""
from __future__ import annotations

import numpy as np

from labference_ros.core import proportions

DRAWS = 2000
SEED = 240926
LEVELS = ("episode", "pair", "family")


def _keys(ep: dict, index: int, level: str) -> list[str]:
    run = ep.get("run") or {}
    inst = run.get("instance") or {}
    # Retried attempts of one registered episode share its unit (see episodes.resolve).
    own = f"episode:{ep.get('unit') or ep.get('episode_id') or run.get('episode_id') or index}"
    keys = [own]
    if level in ("pair", "family") and inst.get("pair_id"):
        keys.append(f"pair:{inst['pair_id']}")
    if level == "family":
        fam = inst.get("family") or inst.get("stratum")
        if fam:
            keys.append(f"family:{fam}")
    return keys


def clusters(episodes, level: str = "pair") -> list[list[dict]]:
    """Connected components of the episode/pair/family links, in a stable order."""
    if level not in LEVELS:
        raise ValueError(f"unknown bootstrap level {level!r}; one of {LEVELS}")
    episodes = list(episodes)
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    own = []
    for i, ep in enumerate(episodes):
        ks = _keys(ep, i, level)
        own.append(ks[0])
        for k in ks[1:]:
            parent[find(k)] = find(ks[0])
    groups: dict[str, list[int]] = {}
    for i, k in enumerate(own):
        groups.setdefault(find(k), []).append(i)
    # Order clusters by their smallest own key so input order does not change draws.
    ordered = sorted(groups.values(), key=lambda idx: min(own[i] for i in idx))
    return [[episodes[i] for i in idx] for idx in ordered]


class Resampler:
    def __init__(self, episodes, level: str = "pair", draws: int = DRAWS, seed: int = SEED):
        self.level, self.draws, self.seed = level, draws, seed
        self.clusters = clusters(episodes, level)
        k = len(self.clusters)
        rng = np.random.default_rng(seed)
        self.counts = np.zeros((draws, k))
        if k:
            idx = rng.integers(0, k, size=(draws, k))
            np.add.at(self.counts, (np.repeat(np.arange(draws), k), idx.ravel()), 1.0)

    def interval(self, ratio) -> dict:
        """ratio(episodes) -> (numerator, denominator); numerator None = unknown."""
        parts = [ratio(c) for c in self.clusters]
        out = {"n_clusters": len(parts), "level": self.level, "draws": self.draws, "seed": self.seed}
        if not parts or any(p[0] is None for p in parts):
            return {**out, "estimate": None, "lo": None, "hi": None, "undefined_draws": None}
        num = np.array([float(p[0]) for p in parts])
        den = np.array([float(p[1]) for p in parts])
        estimate = None if den.sum() == 0 else float(num.sum() / den.sum())
        d_num, d_den = self.counts @ num, self.counts @ den
        defined = d_den > 0
        values = d_num[defined] / d_den[defined]
        lo = hi = None
        if values.size:
            lo, hi = (float(v) for v in np.percentile(values, [2.5, 97.5]))
        return {**out, "estimate": estimate, "lo": lo, "hi": hi,
                "undefined_draws": int((~defined).sum())}

    def rate_interval(self, ratio) -> dict:
        """A proportion over the clusters: Wilson when every cluster holds at most one
        outcome, else Wilson on the design-effect-adjusted effective n (see
        core/proportions.py); k/N, the method and the bootstrap interval beside it."""
        parts = [ratio(c) for c in self.clusters]
        boot = self.interval(ratio)
        out = {"level": self.level, "n_clusters": len(parts), "confidence": proportions.CONFIDENCE,
               "bootstrap": {k: boot[k] for k in ("lo", "hi", "draws", "seed", "undefined_draws")}}
        if not parts or any(p[0] is None for p in parts):
            return {**out, "method": None, "k": None, "n": None, "estimate": None, "lo": None, "hi": None}
        num = [float(p[0]) for p in parts]
        den = [float(p[1]) for p in parts]
        k, n = sum(num), sum(den)
        if n <= 0:
            return {**out, "method": None, "k": k, "n": n, "estimate": None, "lo": None, "hi": None}
        if max(den) <= 1:  # independent outcomes: one per cluster
            lo, hi = proportions.wilson(k, n)
            return {**out, "method": proportions.WILSON, "k": k, "n": n, "estimate": k / n, "lo": lo, "hi": hi}
        r = proportions.clustered_wilson(num, den)
        return {**out, "method": proportions.WILSON_DEFF, "k": k, "n": n, "estimate": r.estimate,
                "design_effect": r.design_effect, "effective_n": r.effective_n, "lo": r.lo, "hi": r.hi}
