"""Free space for a run, estimated from its recording settings before it starts.

The estimate is an upper bound per episode over its sim-time deadline: the
bag holds every camera frame uncompressed (3 cameras x width x height x 3
bytes x camera_rate per sim second) plus the other topics, and the episode's
JSONL records; videos are a small fraction of the raw frames. A run whose
estimate exceeds the free space of its output file system is refused before
any node starts (`free_space_check:=false` skips the check).
"""
from __future__ import annotations

import shutil
from pathlib import Path

CAMERAS = 3
OTHER_TOPICS_BYTES_PER_S = 512 * 1024  # joint states, world state, wrench, referee streams
RECORDS_BYTES_PER_S = 64 * 1024  # events, receipts, scores, policy actions


class NotEnoughSpace(RuntimeError):
    pass


def estimate_run_bytes(values: dict[str, str], episodes: int) -> int:
    deadline = float(values.get("deadline_s", "60"))
    per_s = RECORDS_BYTES_PER_S
    if values.get("record", "true") == "true":
        frame = int(values.get("image_width", "320")) * int(values.get("image_height", "240")) * 3
        per_s += CAMERAS * frame * float(values.get("camera_rate", "10")) + OTHER_TOPICS_BYTES_PER_S
    return int(episodes * deadline * per_s)


def mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def check_free_space(base: Path, values: dict[str, str], episodes: int) -> None:
    need = estimate_run_bytes(values, episodes)
    free = shutil.disk_usage(base).free
    if free < need:
        rec = "record:=true" if values.get("record", "true") == "true" else "record:=false"
        raise NotEnoughSpace(
            f"not enough free space for the run under {base}: {mib(free)} free, about {mib(need)} needed "
            f"({episodes} episodes of up to {float(values.get('deadline_s', '60')):g} sim s, {rec}); free space, "
            f"choose another output_dir, record fewer episodes, or pass free_space_check:=false")
