"""What a campaign run launches, decided before anything starts (no I/O here).

The coordinating process turns a lock plus the set of finished episodes into
chunks (one launcher call each), numbers attempt directories, and hands every
running chunk a ROS domain of its own. None of this depends on how many
workers there are, so a chunk's launcher sees the same instances in the same
order whichever worker runs it.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

# DDS ports exist for domains 0..232, what ROS 2 accepts on Linux; it advises
# 0..101: higher domains take ports from the ephemeral range (32768..60999) that
# other programs get at random (docs.ros.org, Concepts, "About Domain ID"); each
# launcher says so when it runs on one.
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
    return [*launcher, lock["launch_file"], *(f"{k}:={launch_value(v)}" for k, v in args.items())]


def launch_value(value) -> str:
    """A spec's value as a launch argument: YAML/JSON booleans as launch writes them
    (`record:=false`; Python's `False` is refused by the launcher)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def base_domain_id(text: str) -> int:
    """The runner's ROS_DOMAIN_ID (the first worker slot's domain), refused unless a whole number."""
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"ROS_DOMAIN_ID must be a whole number 0..{MAX_ROS_DOMAIN_ID}, got {text!r}; "
                         f"set one or unset it (default 42)") from None


def domain_ids(base: int, slots: int) -> list[int]:
    """One ROS domain per concurrent chunk: base, base + 1, ... (refused past the ROS limit)."""
    if slots < 1:
        raise ValueError(f"need at least one worker slot, got {slots}")
    if base < 0 or base + slots - 1 > MAX_ROS_DOMAIN_ID:
        raise ValueError(f"ROS domains {base}..{base + slots - 1} exceed 0..{MAX_ROS_DOMAIN_ID} (the ROS 2 range on "
                         f"Linux); set a lower ROS_DOMAIN_ID or use fewer workers")
    return [base + k for k in range(slots)]


class SlotPool:
    """Worker slots, each owning one ROS domain; a chunk holds its slot until it ends,
    so no two chunks running at the same time share a domain.

    A chunk whose launcher may still be stopping (its worker died) gives its domain
    back held: no chunk gets it until `hold_s` seconds later."""

    def __init__(self, domains: list[int], clock: Callable[[], float] = time.monotonic):
        self._free = list(domains)
        self._held: dict[int, float] = {}  # domain -> when it is free again
        self._clock = clock

    def _release_due(self) -> None:
        now = self._clock()
        for domain, until in list(self._held.items()):
            if until <= now:
                del self._held[domain]
                self._free.append(domain)
        self._free.sort()

    def __bool__(self) -> bool:
        self._release_due()
        return bool(self._free)

    def take(self) -> int:
        self._release_due()
        return self._free.pop(0)

    def give_back(self, domain: int, hold_s: float = 0.0) -> None:
        if domain in self._free or domain in self._held:
            raise ValueError(f"domain {domain} given back twice")
        if hold_s > 0:
            self._held[domain] = self._clock() + hold_s
        else:
            self._free.append(domain)
            self._free.sort()

    def seconds_to_release(self) -> float | None:
        """Until the next held domain is free again; None when none is held."""
        if not self._held:
            return None
        return max(0.0, min(self._held.values()) - self._clock())
