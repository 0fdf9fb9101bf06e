"""run_node's spin loop: the events executor runs every ready callback in one turn of
the loop (no return to Python per callback); the Python executors one per turn."""
from __future__ import annotations

import pytest
from ros_domains import own_domain

from labference_ros.nodes.runtime import init_ros, spin_for


@pytest.fixture
def ros_context(monkeypatch):
    with own_domain() as domain:
        monkeypatch.setenv("ROS_DOMAIN_ID", domain)
        from rclpy.context import Context

        context = Context()
        rclpy = init_ros([], context=context)
        try:
            yield context
        finally:
            rclpy.try_shutdown(context=context)


def _timer_fires_in_one_turn(context, executor) -> int:
    from rclpy.node import Node

    node = Node("spin_probe", context=context)
    fired = []
    node.create_timer(0.002, lambda: fired.append(1))
    executor.add_node(node)
    try:
        spin_for(executor, 0.2)()
    finally:
        executor.remove_node(node)
        node.destroy_node()
    return len(fired)


def test_events_executor_runs_every_ready_callback_in_one_turn(ros_context):
    from rclpy.experimental import EventsExecutor

    executor = EventsExecutor(context=ros_context)
    try:
        # A 2 ms timer over a 200 ms turn: dozens of firings, not one.
        assert _timer_fires_in_one_turn(ros_context, executor) >= 10
    finally:
        executor.shutdown(timeout_sec=1.0)


def test_python_executor_runs_one_callback_per_turn(ros_context):
    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=ros_context)
    try:
        assert _timer_fires_in_one_turn(ros_context, executor) == 1
    finally:
        executor.shutdown(timeout_sec=1.0)
