"""The balance model: load-cell support force -> displayed grams (paper 8.2).

m_raw = 1000/g0 (F_up - F_up_empty)            (eq. 8)
m_bar += alpha (m_raw - m_bar), alpha = 1 - exp(-dt/tau_f)   (eq. 9)

Indication follows a laboratory balance: everything it shows (the weight, the
stability indicator, the overload indication) comes from the filtered weight
value, never from one load-cell sample. A balance's weighing filter sits between
its load cell and its weight value, and it reports overload when that value is
in the overload range: MT-SICS answers S/SI with "S +" then, and the display
shows overload instead of a weight (Mettler-Toledo MT-SICS reference manual,
commands S and SI; OIML R 76-1 on indication beyond Max). So a 2 ms contact
impulse that a closing finger gives a standard on the pan (a MuJoCo stiff-contact
transient: docs/balance.md) is no overload, while a load on the pan, a hand
included, that keeps the filtered value above capacity is. The raw sample is
still reported (raw_g) for diagnosis.

The same code runs behind the simulated load cell and in the replay audit, so
it takes plain numbers (sim time, force) and never a simulator handle.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Sequence

from labference_ros.core.measurements import BalanceMeasurement


@dataclass(frozen=True)
class BalanceParameters:
    version: str = "balance-v2"  # v2: overload from the filtered value, not a raw sample
    tau_f_s: float = 0.25  # filter time constant (eq. 9)
    display_quantum_g: float = 0.1
    stability_window_s: float = 1.0
    stability_range_g: float = 0.5  # filtered max - min over the window
    capacity_g: float = 620.0  # ours: a 620 g / 0.1 g precision balance
    max_gap_s: float = 0.1  # a longer silence between wrenches is a missing reading


def quantize(value_g: float, quantum_g: float) -> float:
    """Round half away from zero to the display quantum, without float dust."""
    steps = math.floor(abs(value_g) / quantum_g + 0.5)
    decimals = max(0, -math.floor(math.log10(quantum_g) + 1e-9))
    return math.copysign(round(steps * quantum_g, decimals), value_g) if steps else 0.0


class BalanceModel:
    """Stateful balance: feed it (sim time, support force) in time order."""

    def __init__(self, params: BalanceParameters, g0_m_s2: float):
        # g0 must be the gravity of the world that produced the force (the
        # sim model's own constant), otherwise every reading is scaled.
        if not (math.isfinite(g0_m_s2) and g0_m_s2 > 0):
            raise ValueError(f"gravity must be a positive finite number, got {g0_m_s2!r}")
        self.params = params
        self.g0 = g0_m_s2
        self.empty_force_n: float | None = None
        self.reset()

    def reset(self) -> None:
        """Forget the filter and the stability window (keeps the calibration)."""
        self._filtered: float | None = None
        self._last_t: float | None = None
        self._window: deque[tuple[float, float]] = deque()
        self._window_start: float | None = None

    def calibrate_empty(self, force_up_n: float) -> None:
        """Tare: the support force measured with nothing on the pan."""
        if not math.isfinite(force_up_n):
            raise ValueError("empty-pan force must be finite")
        self.empty_force_n = float(force_up_n)
        self.reset()

    def raw_grams(self, force_up_n: float) -> float:
        assert self.empty_force_n is not None
        return 1000.0 / self.g0 * (force_up_n - self.empty_force_n)

    def update(self, t_s: float, force_n: Sequence[float] | None,
               torque_nm: Sequence[float] | None = None) -> BalanceMeasurement:
        """One load-cell sample. force_n is (Fx, Fy, Fz) in the pan support
        frame whose z opposes gravity; torque is only checked for finiteness."""
        reason = self._invalid_reason(t_s, force_n, torque_nm)
        if reason:
            return self._invalidate(reason)
        p = self.params
        raw = self.raw_grams(float(force_n[2]))
        if self._filtered is None or self._last_t is None:
            self._filtered = raw
            self._window_start = t_s
        else:
            dt = t_s - self._last_t
            if dt > p.max_gap_s:
                # A silent load cell cannot vouch for the time in between.
                self._window.clear()
                self._window_start = t_s
            alpha = 1.0 - math.exp(-dt / p.tau_f_s)
            self._filtered += alpha * (raw - self._filtered)
        self._last_t = t_s
        filtered = self._filtered
        self._window.append((t_s, filtered))
        while self._window and self._window[0][0] < t_s - p.stability_window_s:
            self._window.popleft()
        overload = filtered > p.capacity_g
        covered = self._window_start is not None and t_s - self._window_start >= p.stability_window_s
        values = [v for _, v in self._window]
        stable = covered and not overload and (max(values) - min(values)) <= p.stability_range_g
        return BalanceMeasurement(
            raw_g=raw, filtered_g=filtered,
            displayed_g=quantize(filtered, p.display_quantum_g),
            stable=stable, overload=overload, valid=True, invalid_reason="")

    def _invalid_reason(self, t_s, force_n, torque_nm) -> str:
        if self.empty_force_n is None:
            return "not calibrated: no empty-pan force"
        if t_s is None or not math.isfinite(t_s):
            return "non-finite time stamp"
        if self._last_t is not None and t_s < self._last_t:
            return f"time went backwards ({t_s} < {self._last_t})"
        if force_n is None:
            return "missing wrench"
        if len(force_n) != 3:
            return f"force must have 3 components, got {len(force_n)}"
        if not all(math.isfinite(float(f)) for f in force_n):
            return "non-finite force in wrench"
        if torque_nm is not None and not all(math.isfinite(float(q)) for q in torque_nm):
            return "non-finite torque in wrench"
        return ""

    def _invalidate(self, reason: str) -> BalanceMeasurement:
        # The stability window restarts after any sensor error (paper 8.2);
        # the filter restarts too so a stale value is never displayed as fresh.
        self.reset()
        nan = float("nan")
        return BalanceMeasurement(raw_g=nan, filtered_g=nan, displayed_g=nan, stable=False,
                                  overload=False, valid=False, invalid_reason=reason)
