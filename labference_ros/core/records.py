"""Run records of one episode (paper 8.4), written as they happen.

run.json            resolved run description (written at open, atomically; the
                    episode runner adds `policy` at start and `usage` at the end)
events.jsonl        events, opportunities and legal sets, one JSON object a line
observations.jsonl  delivery receipts and explicit operation reports
online_scores.jsonl live score snapshots
scores.json         final report (atomic tmp + rename; also written on early stop)

Every JSONL line is written whole or not at all (core/linefile.py: a failed
write, e.g. a full disk, is cut back) and fsync'd, so a killed process or a
full disk leaves complete lines behind. Schema: docs/records.md.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

from labference_ros.core.linefile import LineFile

RECORD_FILES = {
    "event": "events.jsonl",
    "opportunity": "events.jsonl",
    "legal_set": "events.jsonl",
    "receipt": "observations.jsonl",
    "report": "observations.jsonl",
    "score_snapshot": "online_scores.jsonl",
}
RECORDS_SCHEMA = 1


def _clean(value):
    """JSON has no NaN/Inf: non-finite numbers become null ("unavailable")."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def dumps(record: dict) -> str:
    return json.dumps(_clean(record), sort_keys=True, separators=(",", ":"), allow_nan=False)


def write_text_atomic(path: Path, text: str) -> None:
    """Write the whole file or leave the old one: a hidden tmp file beside it, fsync'd,
    then renamed over it."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        tmp.unlink(missing_ok=True)  # a full disk leaves no half-written tmp file behind
        if exc.filename is None:  # a failed write or fsync names no file: name the one it was for
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise
    os.replace(tmp, path)


def write_json_atomic(path: Path, data: dict) -> None:
    write_text_atomic(path, json.dumps(_clean(data), sort_keys=True, indent=1, allow_nan=False) + "\n")


def known_sum(values):
    """Sum, or None as soon as one value is unknown: unknown usage is unknown,
    never a partial total (the agent's episode usage and the report's accounting)."""
    values = list(values)
    return None if any(v is None for v in values) else sum(values)


class RunRecords:
    def __init__(self, out_dir: str | Path, run_info: dict, fsync: bool = True):
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        self._files: dict[str, object] = {}
        self._ids: set[str] = set()
        self.scores_written = False
        write_json_atomic(self.dir / "run.json", {"records_schema": RECORDS_SCHEMA, **run_info})
        for name in sorted(set(RECORD_FILES.values())):
            self._files[name] = LineFile(self.dir / name, fsync=fsync)

    def write(self, record: dict) -> None:
        """Append one referee output record to its file (scores go to write_scores)."""
        kind = record.get("record")
        if kind == "scores":
            self.write_scores(record)
            return
        name = RECORD_FILES.get(kind)
        if name is None:
            raise ValueError(f"unknown record kind {kind!r}")
        eid = record.get("event_id")
        if eid is not None:
            if eid in self._ids:
                raise ValueError(f"duplicate event id {eid}")
            self._ids.add(eid)
        self._files[name].write_line(dumps(record))  # a whole line or none (core/linefile.py)

    def write_all(self, records) -> None:
        for r in records:
            self.write(r)

    def write_scores(self, scores: dict, status: str = "final") -> None:
        """Atomic; call on normal end and on any early stop (status e.g. 'early_stop')."""
        data = {k: v for k, v in scores.items() if k != "record"}
        write_json_atomic(self.dir / "scores.json", {"records_schema": RECORDS_SCHEMA, "status": status, **data})
        self.scores_written = True

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files = {}

    def __enter__(self) -> "RunRecords":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()


def stop_early(records: RunRecords, referee, t: float, reason: str = "early_stop") -> dict:
    """Finish the referee and persist everything before the simulator closes."""
    out = referee.finish(t, reason)
    final = out[-1] if out and out[-1].get("record") == "scores" else {"record": "scores", **referee.scores(t)}
    records.write_all(r for r in out if r.get("record") != "scores")
    records.write_scores(final, status=reason)
    return final


# A system that stops itself ended its own episode: a measured outcome (the referee
# has scored any early termination), as final as completion or the deadline.
FINAL_REASONS = ("", "completed", "deadline", "policy_stop", "policy_done")


def final_status(reason: str) -> str:
    """The scores.json status for a finish reason: "final", or the reason an
    evaluation stopped without a measured end (shutdown, superseded, error)."""
    return "final" if reason in FINAL_REASONS else reason


def run_info(contract, instance, *, episode_id: str, policy: dict | None = None,
             observation: dict | None = None, intervention: dict | None = None,
             budgets: dict | None = None, assets: dict | None = None, versions: dict | None = None) -> dict:
    """The run.json body: contract identity and thresholds, seeds, settings, budgets."""
    return {
        "episode_id": episode_id,
        "task": {"contract": contract.to_dict(), "contract_id": contract.contract_id,
                 "contract_hash": contract.content_hash,
                 # The contract's SR/SSR step names, so a report follows the chain the run
                 # was scored under; each step's predicate is the task family's
                 # (TaskFamily.evaluation_chain), so computing SR/SSR needs the family installed.
                 "evaluation_steps": list(getattr(contract, "evaluation_steps", ()))},
        "instance": json.loads(instance.to_json()),
        "layout_hash": instance.layout_hash,
        "seeds": {"task": instance.task_seed, "layout": instance.layout_seed, "policy": instance.policy_seed},
        "policy": policy or {},
        "observation": observation or {},
        "intervention": intervention or {"mode": "none"},
        "budgets": budgets or {},
        "assets": assets or {},
        "versions": versions or {},
    }


def episode_deadline(run_info: dict) -> float | None:
    """The episode's sim-time budget from run.json (budgets.deadline_sim_s), if any."""
    value = (run_info.get("budgets") or {}).get("deadline_sim_s")
    return float(value) if value else None


def task_family_name(run_info: dict) -> str:
    """The task family that scored a recorded episode, from its contract id."""
    contract_id = (run_info.get("task") or {}).get("contract_id") or ""
    if not contract_id:
        raise ValueError("run.json names no task contract (task.contract_id)")
    return contract_id.split(".", 1)[0]


def amend_run_json(out_dir: str | Path, section: str, values: dict) -> None:
    """Merge ``values`` into one section of an episode's run.json (atomically).

    Used by the episode runner for what only the policy bridge knows, reported
    after the referee has opened the records: the tested system's resolved
    profile (at start) and its usage (at the end).
    """
    path = Path(out_dir) / "run.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data[section] = {**(data.get(section) or {}), **values}
    write_json_atomic(path, data)


def read_jsonl(path: str | Path, tolerate_torn_tail: bool = False) -> list[dict]:
    """One JSON object a line. tolerate_torn_tail: a last line that does not parse
    (its writer was killed mid-line) is skipped; a bad line before it still raises."""
    with open(path, encoding="utf-8") as f:
        lines = [line for line in f if line.strip()]
    out = []
    for i, line in enumerate(lines):
        try:
            out.append(json.loads(line))
        except ValueError:
            if tolerate_torn_tail and i == len(lines) - 1:
                break
            raise
    return out
