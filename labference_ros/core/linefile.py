"""Append-only JSONL files that never end in a partial line.

Each line goes out in unbuffered writes; when one fails (a full disk: ENOSPC,
a quota, an I/O error) the file is cut back to where the line began and the
error is raised to the writer, which stops writing that file and records the
episode as an evaluation-validity error where it still can. Later writes to
a failed file raise the same error again without touching it.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path


class LineFile:
    def __init__(self, path: str | Path, fsync: bool = True):
        self.path = Path(path)
        self.fsync = fsync
        self.error: OSError | None = None
        self._f = open(self.path, "ab", buffering=0)

    def write_line(self, text: str) -> None:
        """Append text and a newline, whole or not at all."""
        if self.error is not None:
            raise self.error
        if self._f is None:
            raise ValueError(f"{self.path} is closed")
        data = memoryview((text + "\n").encode("utf-8"))
        fd = self._f.fileno()
        start = os.lseek(fd, 0, os.SEEK_END)
        try:
            while data:
                n = self._f.write(data)
                if not n:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
                data = data[n:]
            if self.fsync:
                os.fsync(fd)
        except OSError as exc:
            try:
                os.ftruncate(fd, start)  # frees what the torn line took; never needs space
            except OSError:
                pass
            self.error = exc if exc.filename else OSError(exc.errno, exc.strerror, str(self.path))
            raise self.error from None

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
