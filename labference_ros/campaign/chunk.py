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

The launcher's whole environment comes with the job, built by the runner before
any worker started: a Dask worker's own environment differs from the runner's
(its nanny sets OMP_NUM_THREADS, PYTHONHASHSEED, ...), and the launcher must
see the same one whichever engine runs it.
"""
from __future__ import annotations

import ctypes
import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

PR_SET_PDEATHSIG = 1
CANCEL_POLL_S = 1.0
STOP_GRACE_S = 30.0
LOG_NAME = "launcher.log"


def _resolve_prctl():
    """libc's prctl, looked up here in the parent: loading a library after fork in a
    multithreaded worker can deadlock on the loader's lock."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
    prctl.restype = ctypes.c_int
    return prctl


_PRCTL = _resolve_prctl()


@dataclass(frozen=True)
class ChunkJob:
    command: list[str]
    attempt_dir: str
    ros_domain_id: int | None  # None: the launcher claims a free domain and says which in its log
    env: dict[str, str]  # the launcher's whole environment (ROS_DOMAIN_ID = ros_domain_id when set)


def _die_with_parent(parent_pid: int):
    def set_parent_death_signal() -> None:
        # Runs in the child before exec. PDEATHSIG follows the thread that forked,
        # which is the chunk's own thread and lives as long as the launcher runs.
        if _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
            os.write(2, b"labference campaign: prctl(PR_SET_PDEATHSIG) failed; launcher not started\n")
            os._exit(125)
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


def claimed_domain(log_path: Path) -> int | None:
    """The ROS domain a launcher said it claimed (`[launch] ROS domain N (...)`)."""
    try:
        text = log_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = re.search(r"^\[launch\] ROS domain (\d+) ", text, re.MULTILINE)
    return int(found.group(1)) if found else None


def run_chunk(job: ChunkJob) -> dict:
    """Start the launcher with the chunk's ROS domain, wait for it; rc, wall_s, where it ran."""
    where = {"host": socket.gethostname(), "worker": _worker_name(), "ros_domain_id": job.ros_domain_id}
    attempt = Path(job.attempt_dir)
    try:
        # Exclusive: a scheduler that re-runs a task after a worker died must not start
        # a second launcher into an attempt that already began.
        logf = open(attempt / LOG_NAME, "x", encoding="utf-8")
    except FileExistsError:
        # Its first launcher may still be stopping (its worker died): hold its domain back.
        return {**where, "rc": -1, "wall_s": None, "error": "attempt already started elsewhere; not rerun",
                "launcher_may_live": True}
    t0 = time.monotonic()
    with logf:
        if _PRCTL is None:
            return {**where, "rc": -1, "wall_s": 0.0,
                    "error": "cannot start launcher: no prctl here to tie it to this process"}
        try:
            proc = subprocess.Popen(job.command, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=job.env, preexec_fn=_die_with_parent(os.getpid()))
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
    if job.ros_domain_id is None:
        result["ros_domain_id"] = claimed_domain(attempt / LOG_NAME)
    if cancelled:
        result["error"] = "cancelled by the scheduler (campaign runner gone)"
    elif rc != 0:
        result["error"] = f"launcher exit status {rc}"
    return result
