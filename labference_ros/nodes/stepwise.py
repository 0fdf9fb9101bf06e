"""Sequential node logic without blocking the executor and without busy awaiting.

A node's procedure is written as a generator that yields what it waits for
(a service answer, a condition); a timer of the node calls `Script.tick()`,
which polls the current wait and resumes the generator when it is over.
Why not `async def` callbacks: rclpy's executor resumes every pending task on
each spin, which spins a core at 100 % while a coroutine awaits (FEASIBILITY:
2 cores); and blocking `client.call()` in a callback deadlocks a
SingleThreadedExecutor.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass


@dataclass(frozen=True)
class ServiceFailure:
    """What a ServiceCall yields back instead of a response."""

    service: str
    reason: str  # "unavailable" (never appeared) | "timeout" (appeared, did not answer) | "refused"
    detail: str

    def __str__(self) -> str:
        return self.detail


def reply_lost(answer) -> bool:
    """A call whose server is there but whose reply never came (not a refusal)."""
    return isinstance(answer, ServiceFailure) and answer.reason == "timeout"


class Wait:
    def poll(self, now: float) -> tuple[bool, object]:
        raise NotImplementedError


class Until(Wait):
    """Until ``predicate()`` returns something other than None (that value), or
    ``timeout_s`` wall seconds pass (then None)."""

    def __init__(self, predicate: Callable[[], object], timeout_s: float | None = None):
        self.predicate, self.timeout_s, self.started = predicate, timeout_s, None

    def poll(self, now):
        if self.started is None:
            self.started = now
        value = self.predicate()
        if value is not None:
            return True, value
        if self.timeout_s is not None and now - self.started >= self.timeout_s:
            return True, None
        return False, None


class ServiceCall(Wait):
    """Wait for the service (discovery can take seconds), call it, wait for the answer.

    Yields the response, or a ServiceFailure after ``timeout_s`` in either phase.
    ``resend_after_s``: for an idempotent service only, the same request is sent again
    after that long without an answer (Fast DDS can drop a reply, docs/pitfalls.md); the
    first answer to any of them is the answer.
    """

    def __init__(self, client, request, timeout_s: float, resend_after_s: float | None = None):
        self.client, self.request, self.timeout_s = client, request, timeout_s
        self.resend_after_s = resend_after_s
        self.future = None
        self.resent: list = []  # the futures of the same request sent again
        self.phase_started = None
        self.last_sent = None

    @property
    def service(self) -> str:
        return getattr(self.client, "srv_name", "?")

    def poll(self, now):
        if self.phase_started is None:
            self.phase_started = now
        if self.future is None:
            if self.client.service_is_ready():
                self.future = self.client.call_async(self.request)
                self.phase_started = self.last_sent = now
            elif now - self.phase_started >= self.timeout_s:
                return True, ServiceFailure(self.service, "unavailable",
                                            f"service {self.service} not available within {self.timeout_s:g} s")
            return False, None
        sent = [self.future, *self.resent]
        answered = next((f for f in sent if f.done()), None)
        if answered is not None:
            self._forget(f for f in sent if f is not answered)
            exc = answered.exception()
            if exc is not None:
                return True, ServiceFailure(self.service, "refused", f"service {self.service} failed: {exc}")
            return True, answered.result()
        if now - self.phase_started >= self.timeout_s:
            self._forget(sent)
            return True, ServiceFailure(self.service, "timeout",
                                        f"service {self.service} did not answer within {self.timeout_s:g} s")
        if self.resend_after_s is not None and now - self.last_sent >= self.resend_after_s:
            self.resent.append(self.client.call_async(self.request))
            self.last_sent = now
        return False, None

    def _forget(self, futures) -> None:
        """A late answer must not land in a later request's place."""
        remove = getattr(self.client, "remove_pending_request", None)
        if callable(remove):
            for future in futures:
                remove(future)


class Script:
    """Drives a generator of Waits; call tick() from a timer."""

    def __init__(self, steps: Generator[Wait, object, object], clock: Callable[[], float] = time.monotonic):
        self.steps, self.clock = steps, clock
        self.current: Wait | None = None
        self.finished = False
        self.result = None

    def tick(self) -> bool:
        if self.finished:
            return True
        try:
            if self.current is None:
                self.current = next(self.steps)
            while True:
                ready, value = self.current.poll(self.clock())
                if not ready:
                    return False
                self.current = self.steps.send(value)
        except StopIteration as stop:
            self.finished, self.result, self.current = True, stop.value, None
            return True
