"""Tracebacks go to a log file, never to the console.

An unexpected exception in the CLI or in a node is written with its full
traceback to a file under $LABFERENCE_LOG_DIR (default:
~/.cache/labference/logs, or the temp directory when that is not writable);
the console gets one line naming the cause and the file.
"""
from __future__ import annotations

import os
import tempfile
import time
import traceback
from pathlib import Path


def log_dir() -> Path:
    env = os.environ.get("LABFERENCE_LOG_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "labference" / "logs"


def write_traceback(what: str, exc: BaseException) -> Path | None:
    """Write exc's traceback to a new log file; its path, or None when no file can be written."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for d in (log_dir(), Path(tempfile.gettempdir()) / "labference-logs"):
        try:
            d.mkdir(parents=True, exist_ok=True)
            path = d / f"{what}-{stamp}-{os.getpid()}.log"
            path.write_text(text, encoding="utf-8")
            return path
        except OSError:
            continue
    return None


def describe(what: str, exc: BaseException) -> str:
    """One console line for an unexpected error: cause and where the traceback went."""
    path = write_traceback(what, exc)
    where = f"traceback in {path}" if path else "no log file could be written"
    return f"{what} failed: {type(exc).__name__}: {exc} ({where})"
