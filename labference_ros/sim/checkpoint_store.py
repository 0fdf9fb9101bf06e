"""lab_sim's checkpoints by id: kept in memory and written to a directory, where a
restore also finds those saved before (another lab_sim, an earlier run)."""
from __future__ import annotations

import pathlib
import uuid


class CheckpointStore:
    def __init__(self, directory):
        self.directory = pathlib.Path(directory)
        self.blobs: dict[str, bytes] = {}

    def save(self, blob: bytes, label: str = "") -> tuple[str, pathlib.Path]:
        """The checkpoint's id (``label``, or a new one) and its file."""
        cid = label or uuid.uuid4().hex[:12]
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{cid}.ckpt"
        path.write_bytes(blob)
        self.blobs[cid] = blob
        return cid, path

    def load(self, cid: str) -> bytes | None:
        blob = self.blobs.get(cid)
        path = self.directory / f"{cid}.ckpt"
        if blob is None and path.is_file():
            blob = path.read_bytes()
        return blob
