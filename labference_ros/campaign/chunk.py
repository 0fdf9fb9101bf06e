"""Run one chunk's launcher: in the campaign process, or inside a Dask worker.

The launcher dies with the process that started it (PR_SET_PDEATHSIG): when a
campaign runner is SIGKILLed, its local Dask worker processes exit at once
(distributed's parent-alive pipe) and the kernel then sends every launcher
SIGTERM, which the launcher forwards to its nodes before it exits. Without it
the launchers are reparented to init and go on writing into the campaign
directory. SIGTERM rather than SIGKILL lets the launcher stop its node
sessions (grandchildren included); it kills what does not stop within its
grace period.

A worker that belongs to an external scheduler outlives a killed runner; there
the chunk watches its own Dask task and stops the launcher the same way once
the scheduler cancels it (the runner's client disconnected).
"""
from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from labference_ros.rosenv import loopback_environ

PR_SET_PDEATHSIG = 1
CANCEL_POLL_S = 1.0
STOP_GRACE_S = 30.0
LOG_NAME = "launcher.log"


@dataclass(frozen=True)
class ChunkJob:
    command: list[str]
    attempt_dir: str
    ros_domain_id: int


def _die_with_parent(parent_pid: int):
    def set_parent_death_signal() -> None:
        # Runs in the child before exec. PDEATHSIG follows the thread that forked,
        # which is the chunk's own thread and lives as long as the launcher runs.
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        except OSError:
            pass
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)
    return set_parent_death_signal


def _dask_task_cancelled() -> bool:
    """True when this runs as a Dask task the scheduler no longer wants."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return False  # not inside a worker
    try:
        task = worker.state.tasks.get(worker.get_current_task())
    except Exception:  # noqa: BLE001 - worker internals differ between versions: do not guess
        return False
    return task is None or task.state in ("cancelled", "released", "forgotten")


def _worker_name() -> str | None:
    try:
        from distributed import get_worker

        return str(get_worker().name)
    except (ImportError, ValueError):
        return None


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_chunk(job: ChunkJob) -> dict:
    """Start the launcher with the chunk's ROS domain, wait for it; rc, wall_s, where it ran."""
    where = {"host": socket.gethostname(), "worker": _worker_name(), "ros_domain_id": job.ros_domain_id}
    attempt = Path(job.attempt_dir)
    try:
        # Exclusive: a scheduler that re-runs a task after a worker died must not start
        # a second launcher into an attempt that already began.
        logf = open(attempt / LOG_NAME, "x", encoding="utf-8")
    except FileExistsError:
        return {**where, "rc": -1, "wall_s": None, "error": "attempt already started elsewhere; not rerun"}
    env = loopback_environ({**os.environ, "ROS_DOMAIN_ID": str(job.ros_domain_id)})
    t0 = time.monotonic()
    with logf:
        try:
            proc = subprocess.Popen(job.command, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=env, preexec_fn=_die_with_parent(os.getpid()))
        except OSError as exc:
            return {**where, "rc": -1, "wall_s": time.monotonic() - t0, "error": f"cannot start launcher: {exc}"}
        cancelled = False
        while True:
            try:
                rc = proc.wait(CANCEL_POLL_S)
                break
            except subprocess.TimeoutExpired:
                if _dask_task_cancelled():
                    cancelled = True
                    _stop(proc)
    result = {**where, "rc": proc.returncode if cancelled else rc, "wall_s": time.monotonic() - t0}
    if cancelled:
        result["error"] = "cancelled by the scheduler (campaign runner gone)"
    elif rc != 0:
        result["error"] = f"launcher exit status {rc}"
    return result
