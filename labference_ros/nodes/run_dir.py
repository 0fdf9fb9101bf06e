"""Writers write only inside their own launch's run directory.

The embedded launcher resolves the run directory before any node starts and
names it in LABFERENCE_RUN_DIR; a start request that points a writer anywhere
else (another graph's episode runner reaching this one) is refused. Without the
variable (nodes started by `ros2 launch` or by hand) any directory is accepted.
"""
from __future__ import annotations

import os
import pathlib

RUN_DIR_ENV = "LABFERENCE_RUN_DIR"


def outside_run_dir(output_dir: str) -> str:
    """'' when ``output_dir`` may be written; else why not (for the service reply)."""
    root = os.environ.get(RUN_DIR_ENV)
    if not root or not output_dir:
        return ""
    target = pathlib.Path(output_dir).resolve()
    base = pathlib.Path(root).resolve()
    if target == base or base in target.parents:
        return ""
    return f"refused: {target} is outside this launch's run directory {base}"
