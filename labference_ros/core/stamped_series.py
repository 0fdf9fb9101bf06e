"""Samples of a stream kept by their stamps, so that a measurement is paired with the
sample of its own time rather than with whichever sample a reader happened to take last.

A reader that falls behind (a loaded machine) receives a reliable writer's backlog in
order; pairing by arrival would then join a balance reading with an arm state from
before it. Kept here: the last `span_s` seconds of samples, oldest first.
"""
from __future__ import annotations

import bisect
from typing import Generic, TypeVar

Value = TypeVar("Value")


class StampedSeries(Generic[Value]):
    def __init__(self, span_s: float):
        if not span_s > 0:
            raise ValueError(f"span_s must be positive, got {span_s}")
        self.span_s = span_s
        self._times: list[float] = []
        self._values: list[Value] = []

    def __len__(self) -> int:
        return len(self._times)

    def add(self, t: float, value: Value) -> None:
        """Keep a sample. A stream's stamps only grow, so one earlier than the newest kept
        means its clock restarted (a simulator's reset): the series starts anew."""
        if self._times and t < self._times[-1]:
            self.clear()
        self._times.append(t)
        self._values.append(value)
        cut = bisect.bisect_left(self._times, t - self.span_s)
        if cut:
            del self._times[:cut]
            del self._values[:cut]

    def clear(self) -> None:
        self._times.clear()
        self._values.clear()

    def newest(self) -> tuple[float, Value] | None:
        if not self._times:
            return None
        return self._times[-1], self._values[-1]

    def nearest(self, t: float, not_before: float = float("-inf")) -> tuple[float, Value] | None:
        """The sample stamped nearest to `t` among those stamped at or after `not_before`
        (a later one wins a tie); None when there is none."""
        first = bisect.bisect_left(self._times, not_before)
        if first == len(self._times):
            return None
        i = bisect.bisect_left(self._times, t, lo=first)
        candidates = [k for k in (i - 1, i) if first <= k < len(self._times)]
        k = min(candidates, key=lambda c: (abs(self._times[c] - t), -c))
        return self._times[k], self._values[k]
