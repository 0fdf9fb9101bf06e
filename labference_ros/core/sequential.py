"""Sequential paired comparison with anytime-valid error control, and its planning.

Two arms run the same task units in a pre-registered order; unit i gives the
pair (candidate right?, reference right?). Only discordant units carry
information on a difference: under the null hypothesis (the two arms'
outcomes of a unit are exchangeable, so equal success rates), each
discordant unit favours the candidate with probability 1/2, whatever the
units' difficulty. The test statistic is a mixture martingale (Robbins 1970;
the e-process of Ramdas et al. 2023, Stat. Sci. 38:576) over the discordant
sequence, with a Beta(a, a) mixture over the candidate's share theta:

    E_m = integral theta^w (1 - theta)^(m - w) dBeta(theta; a, a) / (1/2)^m
        = 2^m B(a + w, a + m - w) / B(a, a)

(m discordant units, w of them for the candidate). E is a nonnegative
martingale with E_0 = 1 under the null, so by Ville's inequality
P(sup_m E_m >= 1/alpha) <= alpha: the campaign may look after every unit and
stop the first time E >= 1/alpha, with type I error at most alpha, however
often it looks. A symmetric mixture makes the test two-sided; the sign of
w - m/2 names the better arm. Without a crossing by `max_pairs` units the
comparison stops at its maximum: no difference was established.

Planning (`plan`) assumes the two arms' outcomes of a unit are independent
given the rates p_reference, p_candidate (positive correlation, as when
units differ in difficulty, makes discordant units rarer but more one-sided;
for a given difference it raises power, so the plan errs on the safe side).
The fixed-N counterpart is McNemar's exact test; both operating
characteristics are computed exactly (no simulation).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

TEST_NAME = "paired_mixture_martingale"
DEFAULT_PRIOR = 0.5  # Jeffreys' Beta(1/2, 1/2) mixture


def log_e_value(discordant: int, candidate_wins: int, prior: float = DEFAULT_PRIOR) -> float:
    from scipy.special import betaln

    m, w, a = discordant, candidate_wins, prior
    return m * math.log(2.0) + float(betaln(a + w, a + m - w) - betaln(a, a))


def crosses(discordant: int, candidate_wins: int, alpha: float, prior: float = DEFAULT_PRIOR) -> bool:
    return log_e_value(discordant, candidate_wins, prior) >= math.log(1.0 / alpha) - 1e-12


@dataclass
class PairedSequentialTest:
    """Feed paired outcomes in the pre-registered order; `status` says whether to go on."""
    alpha: float
    max_pairs: int
    prior: float = DEFAULT_PRIOR
    pairs: int = 0
    candidate_only: int = 0
    reference_only: int = 0
    both: int = 0
    status: str = "running"  # running | boundary | max_reached
    history: list = field(default_factory=list, repr=False)

    def __post_init__(self):
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        if self.max_pairs < 1:
            raise ValueError(f"max_pairs must be at least 1, got {self.max_pairs}")
        if self.prior <= 0:
            raise ValueError(f"prior must be positive, got {self.prior}")

    @property
    def threshold(self) -> float:
        return 1.0 / self.alpha

    @property
    def discordant(self) -> int:
        return self.candidate_only + self.reference_only

    @property
    def e_value(self) -> float:
        return math.exp(log_e_value(self.discordant, self.candidate_only, self.prior))

    @property
    def stopped(self) -> bool:
        return self.status != "running"

    def update(self, candidate_right: bool, reference_right: bool) -> str:
        """One unit's outcomes; refused once the test has stopped."""
        if self.stopped:
            raise RuntimeError(f"the comparison stopped ({self.status}); no further units count")
        self.pairs += 1
        if candidate_right and not reference_right:
            self.candidate_only += 1
        elif reference_right and not candidate_right:
            self.reference_only += 1
        elif candidate_right:
            self.both += 1
        if crosses(self.discordant, self.candidate_only, self.alpha, self.prior):
            self.status = "boundary"
        elif self.pairs >= self.max_pairs:
            self.status = "max_reached"
        return self.status

    def feed(self, outcomes) -> str:
        """Outcomes in order until the test stops; the units after the stop are not read."""
        for c, r in outcomes:
            if self.stopped:
                break
            self.update(c, r)
        return self.status

    def summary(self) -> dict:
        better = None
        if self.status == "boundary":
            better = "candidate" if self.candidate_only > self.reference_only else "reference"
        reasons = {"running": f"no boundary crossed after {self.pairs} of at most {self.max_pairs} units",
                   "boundary": f"e-value {self.e_value:.4g} >= 1/alpha = {self.threshold:.4g} after {self.pairs} "
                               f"units: the {better} is better (type I error <= {self.alpha:g})",
                   "max_reached": f"maximum of {self.max_pairs} units reached with e-value {self.e_value:.4g} < "
                                  f"{self.threshold:.4g}: no difference established"}
        return {"test": TEST_NAME, "alpha": self.alpha, "max_pairs": self.max_pairs, "prior": self.prior,
                "status": self.status, "pairs": self.pairs, "both": self.both,
                "candidate_only": self.candidate_only, "reference_only": self.reference_only,
                "e_value": self.e_value, "threshold": self.threshold, "better": better,
                "reason": reasons[self.status]}


# -- operating characteristics (exact) -----------------------------------------------
def _discordant_model(p_candidate: float, p_reference: float) -> tuple[float, float]:
    """P(unit is discordant), P(candidate wins | discordant), arms independent within a unit."""
    only_c = p_candidate * (1 - p_reference)
    only_r = p_reference * (1 - p_candidate)
    q = only_c + only_r
    return q, (only_c / q if q > 0 else 0.5)


def survival_by_discordant(share: float, alpha: float, prior: float, m_max: int) -> np.ndarray:
    """S[m] = P(no crossing within the first m discordant units), m = 0..m_max, when each
    favours the candidate with probability `share`."""
    alive = np.zeros(m_max + 2)
    alive[0] = 1.0  # alive[w]: probability of w wins and no crossing so far
    out = np.empty(m_max + 1)
    out[0] = 1.0
    from scipy.special import betaln

    bound = math.log(1.0 / alpha) - 1e-12
    for m in range(1, m_max + 1):
        nxt = np.zeros_like(alive)
        nxt[1:] += alive[:-1] * share
        nxt[:] += alive * (1 - share)
        w = np.arange(m + 1)
        log_e = m * math.log(2.0) + betaln(prior + w, prior + m - w) - betaln(prior, prior)
        nxt[: m + 1][log_e >= bound] = 0.0  # crossed: stopped, no longer alive
        alive = nxt
        out[m] = alive.sum()
    return out


def sequential_operating(p_candidate: float, p_reference: float, alpha: float, max_pairs: int,
                         prior: float = DEFAULT_PRIOR) -> dict:
    """Probability of stopping at the boundary within max_pairs (power; the type I error
    when the rates are equal) and the expected number of units per arm."""
    from scipy.stats import binom

    q, share = _discordant_model(p_candidate, p_reference)
    surv = survival_by_discordant(share, alpha, prior, max_pairs)
    m = np.arange(max_pairs + 1)
    not_stopped = [float(binom.pmf(m[: n + 1], n, q) @ surv[: n + 1]) for n in range(max_pairs + 1)]
    return {"reject_probability": 1.0 - not_stopped[max_pairs],
            "expected_pairs": float(sum(not_stopped[:max_pairs]))}


def _mcnemar_reject_by_discordant(share: float, alpha: float, d_max: int) -> np.ndarray:
    """R[d] = P(exact McNemar rejects | d discordant units)."""
    from scipy.stats import binom

    out = np.zeros(d_max + 1)
    for d in range(1, d_max + 1):
        w = np.arange(d + 1)
        p = np.minimum(1.0, 2 * binom.cdf(np.minimum(w, d - w), d, 0.5))
        out[d] = float(binom.pmf(w, d, share)[p <= alpha].sum())
    return out


def fixed_power(p_candidate: float, p_reference: float, alpha: float, n: int) -> float:
    """Power of the exact McNemar test with n paired units."""
    from scipy.stats import binom

    q, share = _discordant_model(p_candidate, p_reference)
    reject = _mcnemar_reject_by_discordant(share, alpha, n)
    return float(binom.pmf(np.arange(n + 1), n, q) @ reject)


def expected_wilson_width(n: int, p: float) -> float:
    from scipy.stats import binom

    from .proportions import wilson_arrays

    k = np.arange(n + 1)
    lo, hi = wilson_arrays(k, np.full(n + 1, n))
    return float(binom.pmf(k, n, p) @ (hi - lo))


def worst_wilson_width(n: int) -> float:
    from .proportions import wilson_arrays

    k = np.arange(n + 1)
    lo, hi = wilson_arrays(k, np.full(n + 1, n))
    return float((hi - lo).max())


def plan(p_reference: float, p_candidate: float, alpha: float = 0.05, power: float = 0.8,
         prior: float = DEFAULT_PRIOR, n_limit: int = 2000, episodes: int | None = None) -> dict:
    """Episodes per arm to detect p_reference -> p_candidate with the given power: fixed N
    (exact McNemar) and sequential (this module's test: the maximum that reaches the
    power, and the expected number under both rates), plus the 95 % Wilson interval
    width the chosen N gives. `episodes`: also report these for that N."""
    for name, v in (("p0", p_reference), ("p1", p_candidate)):
        if not 0 <= v <= 1:
            raise ValueError(f"{name} must be a rate in [0, 1], got {v}")
    if p_reference == p_candidate:
        raise ValueError("p0 and p1 are equal: there is no difference to detect")
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError("alpha and power must be in (0, 1)")
    from scipy.stats import binom

    q, share = _discordant_model(p_candidate, p_reference)
    fixed_n = seq_n = None
    limit = min(64, n_limit)
    while True:  # search within a growing limit: small answers stay cheap
        reject = _mcnemar_reject_by_discordant(share, alpha, limit)
        surv = survival_by_discordant(share, alpha, prior, limit)
        fixed_n = seq_n = None
        for n in range(1, limit + 1):
            pmf = binom.pmf(np.arange(n + 1), n, q)
            if fixed_n is None and float(pmf @ reject[: n + 1]) >= power:
                fixed_n = n
            if seq_n is None and 1.0 - float(pmf @ surv[: n + 1]) >= power:
                seq_n = n
            if fixed_n is not None and seq_n is not None:
                break
        if (fixed_n is not None and seq_n is not None) or limit >= n_limit:
            break
        limit = min(2 * limit, n_limit)
    out = {"p0": p_reference, "p1": p_candidate, "alpha": alpha, "power": power,
           "model": "paired units, both arms on the same instances; outcomes of a unit independent given the "
                    "rates (positive correlation raises power for a given difference)",
           "fixed": {"test": "mcnemar_exact", "episodes_per_arm": fixed_n,
                     "power": None if fixed_n is None else fixed_power(p_candidate, p_reference, alpha, fixed_n)},
           "sequential": None, "interval": None, "n_limit": n_limit}
    if seq_n is not None:
        under_h1 = sequential_operating(p_candidate, p_reference, alpha, seq_n, prior)
        under_h0 = sequential_operating(p_reference, p_reference, alpha, seq_n, prior)
        out["sequential"] = {"test": TEST_NAME, "prior": prior, "max_episodes_per_arm": seq_n,
                             "power": under_h1["reject_probability"],
                             "expected_episodes_per_arm_p1": under_h1["expected_pairs"],
                             "expected_episodes_per_arm_p0": under_h0["expected_pairs"],
                             "type_i_error_at_p0": under_h0["reject_probability"]}
    n_for_width = episodes or fixed_n
    if n_for_width:
        out["interval"] = interval_width(n_for_width, p_reference, p_candidate)
    return out


def interval_width(n: int, *rates: float) -> dict:
    """Expected width of the 95 % Wilson interval of one arm's rate with n episodes, at each
    rate, and the widest it can be (at k = n/2)."""
    return {"episodes": n, "method": "wilson",
            "expected_width": {f"{r:g}": expected_wilson_width(n, r) for r in rates},
            "worst_width": worst_wilson_width(n)}
