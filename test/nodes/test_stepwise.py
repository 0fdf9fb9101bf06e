"""Stepwise procedures: service waits and timeouts without blocking an executor."""
from __future__ import annotations

from labference_ros.nodes.stepwise import Script, ServiceCall, ServiceFailure, Until


class FakeFuture:
    def __init__(self):
        self.value, self.is_done = None, False

    def done(self):
        return self.is_done

    def exception(self):
        return None

    def result(self):
        return self.value


class FakeClient:
    srv_name = "/x/do"

    def __init__(self, ready=True):
        self.ready, self.futures, self.removed = ready, [], []

    def service_is_ready(self):
        return self.ready

    def call_async(self, request):
        self.futures.append(FakeFuture())
        return self.futures[-1]

    def remove_pending_request(self, future):
        self.removed.append(future)


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_call_answers_and_the_procedure_goes_on():
    client, clock, got = FakeClient(), Clock(), []

    def steps():
        got.append((yield ServiceCall(client, "req", 5.0)))
        got.append((yield Until(lambda: "now")))

    script = Script(steps(), clock)
    assert not script.tick()
    client.futures[0].value, client.futures[0].is_done = "resp", True
    assert script.tick() and got == ["resp", "now"]


def test_unavailable_and_unanswered_services_fail_after_their_timeout():
    absent, silent, clock, got = FakeClient(ready=False), FakeClient(), Clock(), []

    def steps():
        got.append((yield ServiceCall(absent, "req", 3.0)))
        got.append((yield ServiceCall(silent, "req", 3.0)))

    script = Script(steps(), clock)
    for t in (0.0, 2.9):
        clock.t = t
        assert not script.tick()
    clock.t = 3.0
    assert not script.tick()  # absent gave up; silent called
    assert isinstance(got[0], ServiceFailure) and got[0].reason == "unavailable"
    clock.t = 5.9
    assert not script.tick()
    clock.t = 6.0
    assert script.tick()
    assert got[1].reason == "timeout" and "/x/do" in str(got[1])
    assert silent.removed == silent.futures  # a late answer is dropped


def test_until_times_out_with_none():
    clock, got = Clock(), []

    def steps():
        got.append((yield Until(lambda: None, timeout_s=1.0)))

    script = Script(steps(), clock)
    assert not script.tick()
    clock.t = 1.0
    assert script.tick() and got == [None]


def test_an_idempotent_call_is_sent_again_until_any_of_its_requests_is_answered():
    client, clock, got = FakeClient(), Clock(), []

    def steps():
        got.append((yield ServiceCall(client, "req", 10.0, resend_after_s=2.0)))

    script = Script(steps(), clock)
    for t in (0.0, 1.9):
        clock.t = t
        assert not script.tick()
    assert len(client.futures) == 1  # not before resend_after_s
    clock.t = 2.0
    assert not script.tick()
    clock.t = 4.0
    assert not script.tick()
    assert len(client.futures) == 3  # sent again every 2 s without an answer
    client.futures[1].value, client.futures[1].is_done = "resp", True  # the first reply was lost
    assert script.tick() and got == ["resp"]
    assert client.removed == [client.futures[0], client.futures[2]]  # the others' late answers are dropped


def test_a_call_that_is_not_idempotent_is_sent_once():
    client, clock = FakeClient(), Clock()

    def steps():
        yield ServiceCall(client, "req", 10.0)

    script = Script(steps(), clock)
    for t in (0.0, 3.0, 9.9):
        clock.t = t
        assert not script.tick()
    assert len(client.futures) == 1
