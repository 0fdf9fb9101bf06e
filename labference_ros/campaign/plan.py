"""What a campaign run launches, decided before anything starts (no I/O here).

The coordinating process turns a lock plus the set of finished episodes into
chunks (one launcher call each), numbers attempt directories, and hands every
running chunk a ROS domain of its own. None of this depends on how many
workers there are, so a chunk's launcher sees the same instances in the same
order whichever worker runs it.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# ROS 2 allows domain ids 0..232 on Linux (higher ones overflow the UDP port range).
MAX_ROS_DOMAIN_ID = 232
ATTEMPT_RE = re.compile(r"^attempt-(\d+)$")


@dataclass(frozen=True)
class Chunk:
    arm: dict  # the lock's arm entry
    instances: tuple[dict, ...]  # locked instance dicts, in locked order

    @property
    def instance_ids(self) -> list[str]:
        return [i["instance_id"] for i in self.instances]


def pending_chunks(lock: dict, finished_ids: Mapping[str, Iterable[str]]) -> list[Chunk]:
    """Unfinished locked episodes of every arm, in locked order, cut into chunk_size pieces.

    finished_ids: arm_id -> instance ids that already hold a final result.
    """
    size = max(1, int(lock["chunk_size"]))
    chunks = []
    for arm in lock["arms"]:
        done = set(finished_ids.get(arm["arm_id"], ()))
        pending = [i for i in arm["instances"] if i["instance_id"] not in done]
        chunks += [Chunk(arm, tuple(pending[k:k + size])) for k in range(0, len(pending), size)]
    return chunks


def next_attempt_name(existing: Iterable[str]) -> str:
    """attempt-NNN one past the highest existing number (never reuses a number)."""
    numbers = [int(m.group(1)) for m in map(ATTEMPT_RE.match, existing) if m]
    return f"attempt-{max(numbers, default=0) + 1:03d}"


def launch_command(launcher: list[str], lock: dict, arm: dict, chunk_file: str, n: int, output_dir: str) -> list[str]:
    args = {"episodes": n, "system": arm["system"], "condition": arm["condition"],
            "seed": lock["seeds"].get("launch", 0), "output_dir": output_dir, "instances": chunk_file,
            **arm["args"]}
    return [*launcher, lock["launch_file"], *(f"{k}:={v}" for k, v in args.items())]


def domain_ids(base: int, slots: int) -> list[int]:
    """One ROS domain per concurrent chunk: base, base + 1, ... (refused past the ROS limit)."""
    if slots < 1:
        raise ValueError(f"need at least one worker slot, got {slots}")
    if base < 0 or base + slots - 1 > MAX_ROS_DOMAIN_ID:
        raise ValueError(f"ROS domains {base}..{base + slots - 1} exceed 0..{MAX_ROS_DOMAIN_ID}; "
                         f"set a lower ROS_DOMAIN_ID or use fewer workers")
    return [base + k for k in range(slots)]


class SlotPool:
    """Worker slots, each owning one ROS domain; a chunk holds its slot until it ends,
    so no two chunks running at the same time share a domain."""

    def __init__(self, domains: list[int]):
        self._free = list(domains)

    def __bool__(self) -> bool:
        return bool(self._free)

    def take(self) -> int:
        return self._free.pop(0)

    def give_back(self, domain: int) -> None:
        if domain in self._free:
            raise ValueError(f"domain {domain} given back twice")
        self._free.append(domain)
        self._free.sort()


# Fields of a scores.json that name the attempt rather than describe the result
# (episode ids carry the launcher's chunk index), left out when comparing runs.
ATTEMPT_FIELDS = frozenset({"episode_id"})


def comparable_scores(scores: dict) -> dict:
    """A scores.json without the fields that identify the attempt, for comparing two runs."""
    return {k: v for k, v in scores.items() if k not in ATTEMPT_FIELDS}
