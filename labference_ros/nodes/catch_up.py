"""A service callback that must not answer before the node's own inputs catch up
(the recorder's bag, the referee's measurements): it awaits a condition those
inputs make true, polled on a timer, for at most a timeout.

The awaiting callback must be async and in a callback group of its own, so that
the subscriptions (default group) keep running while it waits.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from rclpy.node import Node
from rclpy.task import Future

POLL_S = 0.02


class CatchUp:
    def __init__(self, node: Node, poll_s: float = POLL_S):
        self._waiting: tuple[Callable[[], bool], float, Future] | None = None
        self._timer = node.create_timer(poll_s, self._poll)
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
        waiter = Future()
        self._waiting = (condition, time.monotonic() + timeout_s, waiter)
        self._timer.reset()
        try:
            return bool(await waiter)
        finally:
            self._waiting = None

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
