"""nodes/catch_up.CatchUp: a callback's wait for the node's own inputs ends when the
condition holds, when the timeout passes, or when it is cancelled (the referee's
finish when a new episode starts meanwhile); one wait at a time."""
from __future__ import annotations

import time

import pytest

from labference_ros.nodes.catch_up import CatchUp
from labference_ros.nodes.runtime import init_ros

rclpy = init_ros([])


@pytest.fixture
def node_and_executor():
    from rclpy.executors import SingleThreadedExecutor

    node = rclpy.create_node("catch_up_test")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    yield node, executor
    executor.shutdown()
    node.destroy_node()


def run_until_done(executor, task, limit_s: float = 10.0):
    deadline = time.monotonic() + limit_s
    while not task.done() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.01)
    assert task.done()
    return task.result()


def test_a_wait_ends_when_the_condition_holds_or_the_timeout_passes(node_and_executor):
    node, executor = node_and_executor
    catch_up = CatchUp(node)
    arrived = {"now": False}
    node.create_timer(0.1, lambda: arrived.update(now=True))
    task = executor.create_task(catch_up.until(lambda: arrived["now"], 5.0))
    executor.spin_once(timeout_sec=0.01)
    assert catch_up.busy
    assert run_until_done(executor, task) is True
    assert not catch_up.busy
    began = time.monotonic()
    task = executor.create_task(catch_up.until(lambda: False, 0.2))
    assert run_until_done(executor, task) is False
    assert time.monotonic() - began >= 0.2


def test_a_cancelled_wait_gives_up_and_a_new_one_can_begin(node_and_executor):
    node, executor = node_and_executor
    catch_up = CatchUp(node)
    first = executor.create_task(catch_up.until(lambda: False, 30.0))
    executor.spin_once(timeout_sec=0.01)
    assert catch_up.busy
    catch_up.cancel()
    assert not catch_up.busy  # a finish of the next episode is not refused meanwhile
    # The next wait begins before the cancelled one's coroutine resumes (what the referee's
    # next finish can do): started by hand, it awaits at once.
    second = catch_up.until(lambda: False, 30.0)
    second.send(None)
    assert run_until_done(executor, first, 5.0) is False
    assert catch_up.busy  # the first wait's end did not clear the second's
    catch_up.cancel()
    second.close()
    assert not catch_up.busy
