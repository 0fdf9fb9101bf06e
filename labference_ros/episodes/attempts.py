"""Every attempted episode, kept as it ends: attempts.jsonl, per-episode attempt.json, summary.json.

An attempt that failed for evaluation reasons (a service that never answered,
a node that left the graph, the runner stopped) is an ERROR row, never dropped.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from labference_ros.core.failures import error_kind
from labference_ros.core.linefile import LineFile
from labference_ros.core.records import dumps, write_json_atomic
from labference_ros.core.summary import summarize


@dataclass
class Attempt:
    episode_id: str
    index: int
    instance_id: str
    system: str
    condition: str
    status: str = "ok"  # ok | error (evaluation validity)
    reason: str = ""  # the finish reason: completed | deadline | policy_stop | aborted | error
    error: str | None = None
    error_kind: str | None = None  # core.failures kind of `error`
    errors: list[str] = field(default_factory=list)
    wall_s: float | None = None  # task time: from the episode's start to its end, setup excluded
    setup_wall_s: float | None = None  # recorder start, reset, node starts and the finish calls
    sim_s: float | None = None
    scores: dict | None = None
    system_events: list[dict] = field(default_factory=list)  # the tested system's own (core.failures.SYSTEM_EVENT_KINDS)

    def fail(self, message: str) -> None:
        self.status = "error"
        self.errors.append(message)
        self.error = self.error or message  # the first failure explains the rest
        self.error_kind = error_kind(self.error)


class AttemptLog:
    def __init__(self, run_dir: Path, run_info: dict):
        self.run_dir = Path(run_dir)
        self.run_info = dict(run_info)
        self.attempts: list[Attempt] = []
        self.run_dir.mkdir(parents=True, exist_ok=True)

    def episode_dir(self, episode_id: str) -> Path:
        return self.run_dir / "episodes" / episode_id

    def record(self, attempt: Attempt) -> None:
        """Persist at once (fsync'd line), before the next episode starts."""
        self.attempts.append(attempt)
        row = asdict(attempt)
        f = LineFile(self.run_dir / "attempts.jsonl")  # a whole line or none, also on a full disk
        try:
            f.write_line(dumps(row))
        finally:
            f.close()
        out = self.episode_dir(attempt.episode_id)
        out.mkdir(parents=True, exist_ok=True)
        write_json_atomic(out / "attempt.json", row)

    def write_summary(self, **run_extra) -> dict:
        summary = summarize([asdict(a) for a in self.attempts], run={**self.run_info, **run_extra})
        write_json_atomic(self.run_dir / "summary.json", summary)
        return summary


def parse_scores(text: str) -> dict | None:
    try:
        data = json.loads(text) if text else None
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None
