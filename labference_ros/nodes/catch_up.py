"""A service callback that must not answer before the node's own inputs catch up
(the recorder's bag, the referee's measurements): it awaits a condition those
inputs make true, polled on a timer, for at most a timeout.

The awaiting callback must be async and in a callback group of its own, so that
the subscriptions (default group) keep running while it waits.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.task import Future

POLL_S = 0.02


class CatchUp:
    def __init__(self, node: Node, poll_s: float = POLL_S):
        self._waiting: tuple[Callable[[], bool], float, Future] | None = None
        # Steady time: on sim time the poll, and with it the timeout, would stop with /clock.
        self._timer = node.create_timer(poll_s, self._poll, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._timer.cancel()

    @property
    def busy(self) -> bool:
        """A callback awaits already (one wait at a time)."""
        return self._waiting is not None

    async def until(self, condition: Callable[[], bool], timeout_s: float) -> bool:
        """True once ``condition()`` holds; False when timeout_s passed first."""
        if condition():
            return True
        if self._waiting is not None:
            raise RuntimeError("CatchUp.until is already awaited")
        waiting = (condition, time.monotonic() + timeout_s, Future())
        self._waiting = waiting
        self._timer.reset()
        try:
            return bool(await waiting[2])
        finally:
            if self._waiting is waiting:  # not a later wait begun after a cancel
                self._waiting = None

    def cancel(self) -> None:
        """End a wait now, as a timeout would (the episode it waited for is gone)."""
        if self._waiting is not None:
            waiter = self._waiting[2]
            self._waiting = None
            if not waiter.done():
                waiter.set_result(False)
        self._timer.cancel()

    def _poll(self) -> None:
        if self._waiting is None:
            self._timer.cancel()
            return
        condition, give_up_at, waiter = self._waiting
        if condition():
            waiter.set_result(True)
        elif time.monotonic() >= give_up_at:
            waiter.set_result(False)
        if waiter.done():
            self._timer.cancel()
