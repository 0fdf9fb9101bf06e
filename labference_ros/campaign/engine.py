"""Where chunks run: in the campaign process, or on Dask distributed workers.

Both engines take a ChunkJob and give back run_chunk's result; the campaign
runner does all bookkeeping (attempt directories, ledger, ROS domains) itself.

The local Dask cluster binds only 127.0.0.1: scheduler, nannies, workers and
the scheduler's HTTP endpoint (no dashboard). Measured on the development
machine it sends nothing off loopback; test/reporting/test_campaign_workers.py
checks that in a sealed network namespace.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
from collections.abc import Iterator

from .chunk import ChunkJob, run_chunk

LOOPBACK = "127.0.0.1"


class InProcessEngine:
    """One chunk at a time in this process (`--workers 1`): no cluster to start."""

    slots = 1
    description = "in-process"

    def __init__(self):
        self._jobs: dict[int, ChunkJob] = {}

    def submit(self, job: ChunkJob, key: str) -> int:
        handle = len(self._jobs)
        self._jobs[handle] = job
        return handle

    def wait_any(self, handles) -> list[tuple[object, dict]]:
        handle = next(iter(handles))
        return [(handle, run_chunk(self._jobs.pop(handle)))]


class DaskEngine:
    """Chunks as Dask tasks, one per worker thread at a time."""

    def __init__(self, client, slots: int, description: str):
        self.client, self.slots, self.description = client, slots, description

    def submit(self, job: ChunkJob, key: str):
        # pure=False and no retries: a chunk is an attempt, never silently repeated.
        return self.client.submit(run_chunk, job, key=key, pure=False, retries=0)

    def wait_any(self, handles) -> list[tuple[object, dict]]:
        from distributed import wait

        done = wait(list(handles), return_when="FIRST_COMPLETED").done
        out = []
        for future in done:
            try:
                out.append((future, future.result()))
            except (Exception, concurrent.futures.CancelledError) as exc:  # a worker died, the task was lost
                out.append((future, {"rc": -1, "wall_s": None, "error": f"worker failed: {exc!r}"}))
        return out


@contextlib.contextmanager
def local_cluster(workers: int) -> Iterator:
    """A loopback-only LocalCluster of `workers` single-threaded worker processes with nannies."""
    import dask
    from distributed import Client, LocalCluster

    # A task whose worker dies is reported, not rescheduled (the chunk's attempt is spent).
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with LocalCluster(host=LOOPBACK, dashboard_address=None, n_workers=workers, threads_per_worker=1,
                          processes=True, scheduler_kwargs={"dashboard_address": f"{LOOPBACK}:0"},
                          silence_logs=40) as cluster, Client(cluster) as client:
            yield client


@contextlib.contextmanager
def open_engine(workers: int | None = None, scheduler: str | None = None) -> Iterator:
    """workers=1 without a scheduler: in-process. Otherwise Dask: a local cluster of
    `workers`, or the scheduler at `scheduler` with at most `workers` chunks at a time
    (default: its worker threads)."""
    if scheduler:
        from distributed import Client

        with Client(scheduler) as client:
            threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
            slots = workers or threads
            if slots < 1:
                raise RuntimeError(f"scheduler {scheduler} has no workers")
            yield DaskEngine(client, slots, f"scheduler {scheduler}, {slots} slot(s)")
        return
    workers = workers or 1
    if workers == 1:
        yield InProcessEngine()
        return
    with local_cluster(workers) as client:
        yield DaskEngine(client, workers, f"local Dask cluster of {workers} workers on {LOOPBACK}")
