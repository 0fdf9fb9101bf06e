"""The one place where ROS is initialised and torn down in this project.

Every node entry point goes through ``run_node`` so that the loopback-only DDS
environment is applied before ``rclpy.init`` and shutdown is clean (timers
cancelled, executor shut down, then ``rclpy.shutdown``) on SIGINT/SIGTERM.
"""
from __future__ import annotations

import faulthandler
import os
import signal
import sys
from collections.abc import Callable, Sequence

from labference_ros.rosenv import apply_loopback


def init_ros(args: Sequence[str] | None = None, context=None):
    """rclpy, initialised (the default context, or `context`: a participant of its own)
    with discovery on loopback."""
    apply_loopback()
    import rclpy

    rclpy.init(args=list(args) if args is not None else None, context=context,
               signal_handler_options=_no_handlers())
    return rclpy


def _no_handlers():
    from rclpy.signals import SignalHandlerOptions

    return SignalHandlerOptions.NO


class _Stop(Exception):
    pass


EXIT_NODE_FAILED = 70  # an unexpected error; its traceback is in the log file the node names


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def make_executor(single_threaded):
    """rclpy's events executor (C++) unless LABFERENCE_EXECUTOR=single: the Python
    executor rebuilds its wait set on every spin and cost about half of the
    graph's CPU (benchmarks/bench_episode.py); both run callbacks one at a time."""
    if os.environ.get("LABFERENCE_EXECUTOR", "events") == "single":
        return single_threaded()
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:  # distributions before Kilted (e.g. Humble) have only the Python executors
        return single_threaded()
    return EventsExecutor()


def run_node(make_node: Callable[[], object], args: Sequence[str] | None = None, what: str | None = None) -> int:
    """Create the node with ``make_node`` and spin it until SIGINT/SIGTERM or ``node.done``.

    ``make_node`` may return several nodes (a tuple or list): they share the process and one
    executor (nodes/composed.py), and the first to finish ends them all.
    A node may set ``node.exit_code`` and ``node.done = True`` to finish on its own.
    An unexpected exception (in construction or a callback) prints one line naming
    the cause and the log file with its traceback, and exits with EXIT_NODE_FAILED.
    """
    # A crash in native code (MuJoCo, EGL, DDS) then leaves the Python stack of every
    # thread on stderr, which the launcher prints under the node's name.
    faulthandler.enable(file=sys.stderr, all_threads=True)
    rclpy = init_ros(sys.argv if args is None else args)
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    from labference_ros.domain_locks import hold_for_node

    hold_for_node()  # a graph started without our launcher still marks its domain as used

    from labference_ros.errorlog import describe

    what = what or os.path.basename(sys.argv[0] or "node").removesuffix(".py")

    spin_loop = sys._getframe().f_code
    stop = {"asked": False, "constructing": True}

    def _on_signal(signum, frame):
        # Python runs this between bytecodes of whatever frame is current. Raised inside a
        # callback, the stop would unwind through rclpy's C++ executor (a FATAL log with a
        # traceback, or a pybind conversion error); there the loop ends once the callback
        # returns. A second signal, or one while the node is built or between spins, raises.
        if stop["constructing"] or stop["asked"] or (frame is not None and frame.f_code is spin_loop):
            raise _Stop(signum)
        stop["asked"] = True

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    try:
        made = make_node()
    except (_Stop, KeyboardInterrupt):
        _quiet_signals()
        rclpy.try_shutdown()
        return 0
    except Exception as exc:
        _quiet_signals()
        _say(describe(what, exc))
        rclpy.try_shutdown()
        return EXIT_NODE_FAILED
    nodes = tuple(made) if isinstance(made, (tuple, list)) else (made,)
    stop["constructing"] = False
    executor = make_executor(SingleThreadedExecutor)
    for node in nodes:
        executor.add_node(node)
    code = 0
    try:
        while rclpy.ok() and not any(getattr(n, "done", False) for n in nodes) and not stop["asked"]:
            executor.spin_once(timeout_sec=0.1)
        code = _exit_code(nodes)
    except (_Stop, KeyboardInterrupt, ExternalShutdownException):
        code = _exit_code(nodes)
    except Exception as exc:
        _say(describe(what, exc))
        code = EXIT_NODE_FAILED
    finally:
        # A second stop signal while closing must not cut the records short.
        _quiet_signals()
        for node in reversed(nodes):  # the last built first, as a failed construction unwinds
            close = getattr(node, "close", None)
            if callable(close):
                try:
                    close()
                except Exception as exc:
                    _say(describe(f"{what} close", exc))
                    code = code or EXIT_NODE_FAILED
        executor.shutdown(timeout_sec=1.0)
        for node in reversed(nodes):
            try:
                node.destroy_node()
            except Exception as exc:  # the others still go, and ROS still shuts down
                _say(describe(f"{what} destroy", exc))
                code = code or EXIT_NODE_FAILED
        # The executor's own teardown runs here, while the context is still valid,
        # rather than whenever the interpreter happens to collect it.
        del executor
        if rclpy.ok():
            rclpy.shutdown()
    return code


def _exit_code(nodes) -> int:
    """The first non-zero exit code a node set, else 0."""
    return next((int(c) for c in (getattr(n, "exit_code", 0) for n in nodes) if c), 0)


def _quiet_signals() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
