"""Population metrics of paper section 7 over plain per-item results.

A rate whose denominator is zero is None ("unavailable"), never 0.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np


def rate(num: float, den: float) -> float | None:
    return None if den == 0 else num / den


def choice_rates(items: Iterable[tuple]) -> dict:
    """B_next and C_id (eqs. 4-5) over a fixed population J.

    items: (first_choice or None, legal_set) per checkpoint; None = no identified choice.
    """
    items = list(items)
    n = len(items)
    identified = sum(1 for b, _ in items if b is not None)
    correct = sum(1 for b, u in items if b is not None and b in u)
    b_next, c_id = rate(correct, n), rate(identified, n)
    accuracy = None if not c_id else b_next / c_id
    return {"population": n, "identified": identified, "correct": correct,
            "B_next": b_next, "C_id": c_id, "accuracy_identified": accuracy, "coverage": c_id}


def reach_rates(n_run: int, n_reach: int, n_correct: int, n_identified: int | None = None) -> dict:
    out = {"N_run": n_run, "N_reach": n_reach, "N_correct": n_correct,
           "reach": rate(n_reach, n_run), "correct_given_reach": rate(n_correct, n_reach),
           "correct_per_run": rate(n_correct, n_run)}
    if n_identified is not None:
        out["N_identified"] = n_identified
        out["identified_given_reach"] = rate(n_identified, n_reach)
    return out


def e_fixed(confirmed: Sequence[bool]) -> float | None:
    """Eq. 6 over a common population K of verified starts."""
    return rate(sum(1 for c in confirmed if c), len(confirmed))


def p_state(pairs: Sequence[tuple]) -> dict:
    """Eq. 7 over a fixed list of answer-changing pairs.

    Each pair is (correct_i, correct_i') with None for an unresolved member.
    With u unresolved pairs among N, only bounds s/N and (s+u)/N are reported.
    """
    n = len(pairs)
    s = sum(1 for a, b in pairs if a is True and b is True)
    u = sum(1 for a, b in pairs if (a is None or b is None) and a is not False and b is not False)
    return {"N": n, "verified_correct": s, "unresolved": u,
            "P_state": rate(s, n) if u == 0 else None,
            "lower": rate(s, n), "upper": rate(s + u, n)}


def gain(pairs: Sequence[tuple], higher_is_better: bool = True) -> float | None:
    """Eq. 3: mean of Y_supported - Y_base over complete pairs; errors reversed."""
    if any(a is None or b is None for a, b in pairs):
        return None  # reported only once every registered pair has valid outcomes
    diffs = [(a - b) if higher_is_better else (b - a) for a, b in pairs]
    return rate(sum(diffs), len(diffs))


def interaction(y_both: float, y_o1: float, y_o2: float, y_none: float) -> float:
    return y_both - y_o1 - y_o2 + y_none


def duration_stats(values: list[float]) -> dict | None:
    """Mean, median, 95th percentile, maximum and total of durations (seconds); None for
    none. A remote policy's request latency per episode and per report cell uses it."""
    if not values:
        return None
    a = np.asarray(values, dtype=np.float64)
    return {"mean": float(a.mean()), "p50": float(np.median(a)), "p95": float(np.percentile(a, 95)),
            "max": float(a.max()), "total": float(a.sum())}
