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
import ipaddress
import sys
from collections.abc import Iterator

from .chunk import ChunkJob, run_chunk

LOOPBACK = "127.0.0.1"
WORKERS_START_S = 300  # a local cluster's workers all registered, or refuse to run


class NoWorkers(RuntimeError):
    """The engine has nothing to run chunks on."""


def failed_attempt(what: str, exc: BaseException) -> dict:
    """run_chunk's result for a chunk that raised or whose worker was lost: a failed
    attempt. Its launcher may have started and may still be stopping."""
    return {"rc": -1, "wall_s": None, "error": f"{what}: {exc!r}", "launcher_may_live": True}


class InProcessEngine:
    """One chunk at a time in this process (`--workers 1`): no cluster to start."""

    slots = 1
    description = "in-process"

    def __init__(self):
        self._jobs: dict[str, ChunkJob] = {}

    def submit(self, job: ChunkJob, key: str) -> str:
        self._jobs[key] = job
        return key

    def cancel(self, handle) -> None:
        """Nothing to cancel: a chunk here has ended before wait_any returns."""

    def wait_any(self, handles, timeout: float | None = None) -> list[tuple[object, dict]]:
        # Runs the chunk to its end here: nothing else runs meanwhile, so no timeout applies.
        handle = next(iter(handles))
        try:
            result = run_chunk(self._jobs.pop(handle))
        except Exception as exc:  # noqa: BLE001 - recorded as the attempt's failure, as on a worker
            result = failed_attempt("chunk failed", exc)
        return [(handle, result)]


class DaskEngine:
    """Chunks as Dask tasks, one per worker thread at a time."""

    def __init__(self, client, slots: int, description: str):
        self.client, self.slots, self.description = client, slots, description

    def submit(self, job: ChunkJob, key: str):
        # A key of its own (the attempt) and no retries: a chunk is an attempt, never silently repeated.
        return self.client.submit(run_chunk, job, key=key, retries=0)

    def cancel(self, handle) -> None:
        """Give up on a chunk whose result is overdue (its worker stuck or cut off); the scheduler
        tells a worker still running it to stop its launcher."""
        handle.cancel()

    def wait_any(self, handles, timeout: float | None = None) -> list[tuple[object, dict]]:
        """Results of the chunks done first; [] when none is done within `timeout` seconds."""
        from distributed import wait

        try:
            done = wait(list(handles), timeout=timeout, return_when="FIRST_COMPLETED").done
        except TimeoutError:
            return []
        out = []
        for future in done:
            try:
                out.append((future, future.result()))
            except (Exception, concurrent.futures.CancelledError) as exc:  # a worker died, the task was lost
                out.append((future, failed_attempt("worker failed", exc)))
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
            client.wait_for_workers(workers, timeout=WORKERS_START_S)
            yield client


def unencrypted_remote(address: str) -> bool:
    """True for a scheduler address that leaves this machine over plain TCP: the chunks'
    payloads (job environments, lock checks, returned records) would travel unencrypted
    and unauthenticated. `tls://` addresses and loopback ones are fine."""
    scheme, _, rest = address.rpartition("://")
    if scheme and scheme != "tcp":
        return False
    host = rest.rsplit(":", 1)[0].strip("[]") if ":" in rest else rest
    if host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True  # a host name: another machine, as far as this check can tell


@contextlib.contextmanager
def open_engine(workers: int | None = None, scheduler: str | None = None) -> Iterator:
    """workers=1 without a scheduler: in-process. Otherwise Dask: a local cluster of
    `workers`, or the scheduler at `scheduler` with at most `workers` chunks at a time
    (default: its worker threads)."""
    if scheduler:
        from distributed import Client

        if unencrypted_remote(scheduler):
            print(f"warning: scheduler {scheduler} is not on loopback and not TLS: chunk payloads and "
                  f"results travel unencrypted (docs/reporting.md, TLS)", file=sys.stderr)
        with Client(scheduler) as client:
            threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
            slots = workers or threads
            if slots < 1:
                raise NoWorkers(f"scheduler {scheduler} has no workers")
            yield DaskEngine(client, slots, f"scheduler {scheduler}, {slots} slot(s)")
        return
    workers = workers or 1
    if workers == 1:
        yield InProcessEngine()
        return
    with local_cluster(workers) as client:
        yield DaskEngine(client, workers, f"local Dask cluster of {workers} workers on {LOOPBACK}")
