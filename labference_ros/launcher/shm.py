"""Removal of Fast DDS shared-memory leftovers of participants that are gone.

A process killed hard (SIGKILL, crash) leaves /dev/shm/fastdds_* segments and
ports behind. Fast DDS marks ownership with an `_el`/`_sl` lock file that its
owner holds locked while alive (the criterion of `fastdds shm clean`). Other
runs may share /dev/shm, so a leftover is removed only with three proofs: its
lock file is not locked, no living process has any of its files open or
mapped (psutil), and it has not changed for a while (not being created now).
"""
from __future__ import annotations

import fcntl
import os
import re
import time
from pathlib import Path

import psutil

SHM_DIR = Path("/dev/shm")
# <prefix>_<16 hex> segments and <prefix>_port<N> ports, each with a lock file.
LOCK_RE = re.compile(r"^(?P<base>(fastdds|fastrtps)_([0-9a-z]{16}|port\d{1,5}))_(el|sl)$")
MIN_AGE_S = 5.0


def _locked(path: Path) -> bool:
    try:
        with open(path, "ab") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(f, fcntl.LOCK_UN)
        return False
    except OSError:
        return True


def _files_in_use(directory: Path) -> set[str]:
    """Names under ``directory`` that a living process has open or mapped."""
    prefix = str(directory).rstrip("/") + "/"
    used: set[str] = set()
    for proc in psutil.process_iter():
        try:
            used.update(f.path for f in proc.open_files() if f.path.startswith(prefix))
            with open(f"/proc/{proc.pid}/maps", encoding="utf-8", errors="replace") as maps:
                for line in maps:
                    at = line.find(prefix)
                    if at >= 0:
                        used.add(line[at:].strip().removesuffix(" (deleted)"))
        except (psutil.Error, OSError):
            continue
    return {os.path.basename(p) for p in used}


def _group(base: str, lock_name: str) -> list[str]:
    files = [base, lock_name]
    if "_port" in base:
        files.append(f"sem.{base}_mutex")
    return files


def dead_participant_files(directory: Path = SHM_DIR, min_age_s: float = MIN_AGE_S) -> list[Path]:
    try:
        names = set(os.listdir(directory))
    except FileNotFoundError:
        return []
    candidates = []
    now = time.time()
    for name in sorted(names):
        m = LOCK_RE.match(name)
        if not m:
            continue
        group = [f for f in _group(m.group("base"), name) if f in names]
        try:
            newest = max(os.stat(directory / f).st_mtime for f in group)
        except FileNotFoundError:
            continue
        if now - newest < min_age_s or _locked(directory / name):
            continue
        candidates.append(group)
    if not candidates:
        return []
    in_use = _files_in_use(directory)
    return [directory / f for group in candidates if not in_use.intersection(group) for f in group]


def clean_dead_participants(directory: Path = SHM_DIR, min_age_s: float = MIN_AGE_S) -> list[Path]:
    removed = []
    for path in dead_participant_files(directory, min_age_s):
        try:
            path.unlink()
            removed.append(path)
        except FileNotFoundError:
            pass
    return removed
