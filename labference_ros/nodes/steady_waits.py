"""Timed waits of a node's async callbacks on steady time, ended by one timer.

The timer is created once and only cancelled and reset after: rclpy does not guard
destroying a timer inside a callback (a subscription destroyed so crashed the
recorder). Steady, like the deadlines: sim time stands still while lab_sim's advance
waits."""
from __future__ import annotations

import time

from rclpy.clock import Clock, ClockType
from rclpy.task import Future


class SteadyWaits:
    def __init__(self, node, poll_s: float):
        self.waits: list[tuple[float, Future, object]] = []  # (monotonic deadline, future, its result then)
        self.timer = node.create_timer(poll_s, self._end_due_waits, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.timer.cancel()

    async def pause(self, seconds: float) -> None:
        """Let the executor run other callbacks for about ``seconds``."""
        await self.resolve_after(seconds, Future(), True)

    def resolve_after(self, seconds: float, future: Future, result) -> Future:
        """``future``, given ``result`` after ``seconds`` unless it is done before."""
        self.waits.append((time.monotonic() + seconds, future, result))
        if self.timer.is_canceled():
            self.timer.reset()
        return future

    def _end_due_waits(self) -> None:
        """Give each wait past its deadline its result; stop ticking when none is left."""
        now = time.monotonic()
        waiting = []
        for deadline, future, result in self.waits:
            if future.done():
                continue
            if now >= deadline:
                future.set_result(result)
            else:
                waiting.append((deadline, future, result))
        self.waits = waiting
        if not waiting:
            self.timer.cancel()


class CommandWait:
    """An advance's wait for the commands of the boundaries it names; it ends "arrived",
    "timeout" or "reset" (a reset or restore: the commands belong to the old timeline)."""

    def __init__(self, waits: SteadyWaits):
        self.waits = waits
        self.waiter: tuple[Future, object] | None = None  # (future, whether the commands are here)

    async def until(self, arrived, timeout_s: float) -> str:
        future = Future()
        self.waiter = (future, arrived)
        try:
            return await self.waits.resolve_after(timeout_s, future, "timeout")
        finally:
            self.waiter = None  # its own: no other advance starts while one waits

    def wake(self) -> None:
        """A command came: the wait ends if it was the last one missing."""
        if self.waiter and self.waiter[1]() and not self.waiter[0].done():
            self.waiter[0].set_result("arrived")

    def end(self) -> None:
        if self.waiter is not None and not self.waiter[0].done():
            self.waiter[0].set_result("reset")
