"""Another process that keeps every core busy while a benchmark runs (the soak's and
the completeness benchmark's "both cores saturated by another process")."""
from __future__ import annotations

import contextlib
import multiprocessing
import os


def _spin(stop) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x = (x * 1103515245 + 12345) & 0xFFFFFFFF


@contextlib.contextmanager
def saturated(cores: int | None = None):
    """One busy process per core (default: all of them) for the duration of the block."""
    n = cores or os.cpu_count() or 1
    stop = multiprocessing.Event()
    procs = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    try:
        yield n
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
