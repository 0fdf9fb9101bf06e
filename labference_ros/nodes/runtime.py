"""The one place where ROS is initialised and torn down in this project.

Every node entry point goes through ``run_node`` so that the loopback-only DDS
environment is applied before ``rclpy.init`` and shutdown is clean (timers
cancelled, executor shut down, then ``rclpy.shutdown``) on SIGINT/SIGTERM.
"""
from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Sequence

from labference_ros.rosenv import apply_loopback


def init_ros(args: Sequence[str] | None = None):
    apply_loopback()
    import rclpy

    rclpy.init(args=list(args) if args is not None else None, signal_handler_options=_no_handlers())
    return rclpy


def _no_handlers():
    from rclpy.signals import SignalHandlerOptions

    return SignalHandlerOptions.NO


class _Stop(Exception):
    pass


def run_node(make_node: Callable[[], object], args: Sequence[str] | None = None) -> int:
    """Create the node with ``make_node`` and spin it until SIGINT/SIGTERM or ``node.done``.

    A node may set ``node.exit_code`` and ``node.done = True`` to finish on its own.
    """
    rclpy = init_ros(sys.argv if args is None else args)
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    from labference_ros.launcher.domains import hold_for_node

    hold_for_node()  # a graph started without our launcher still marks its domain as used

    def _raise(signum, _frame):
        raise _Stop(signum)

    signal.signal(signal.SIGTERM, _raise)
    signal.signal(signal.SIGINT, _raise)
    node = make_node()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    code = 0
    try:
        while rclpy.ok() and not getattr(node, "done", False):
            executor.spin_once(timeout_sec=0.1)
        code = int(getattr(node, "exit_code", 0))
    except (_Stop, KeyboardInterrupt, ExternalShutdownException):
        code = int(getattr(node, "exit_code", 0))
    finally:
        close = getattr(node, "close", None)
        if callable(close):
            close()
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return code
