"""Run a locked campaign through the launcher, resumably.

Layout under the lock's output_dir:
    LOCK_DIGEST                       the lock this directory belongs to
    campaign.jsonl                    append-only ledger (attempt start / end)
    <arm_id>/attempt-NNN/             one launcher call (its output_dir):
        instances.locked.json         the chunk of the locked list it was given
        attempt.json                  arm, command, rc, wall_s, missing instances
        episodes/<episode_id>/...     written by the launcher

An episode is finished when some attempt holds its scores.json with status
"final". A (re)run launches only unfinished locked episodes, each attempt in a
fresh directory, so nothing finished is redone and no earlier attempt (failed,
errored or killed) is overwritten: every attempt stays in the records.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from labference_ros.core.records import write_json_atomic

from .lock import LockMismatch, verify

LAUNCHER_ENV = "LABFERENCE_LAUNCHER"
LIST_SCHEMA = 1


def default_launcher() -> list[str]:
    """`labference launch`; LABFERENCE_LAUNCHER (a command line) replaces it, e.g. in tests."""
    if os.environ.get(LAUNCHER_ENV):
        return shlex.split(os.environ[LAUNCHER_ENV])
    script = Path(sys.executable).with_name("labference")
    return [str(script), "launch"] if script.exists() else ["labference", "launch"]


def _read(path: Path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _ledger(out: Path, record: dict) -> None:
    with open(out / "campaign.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps({"t_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **record},
                           sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


def finished(arm_dir: Path) -> dict[str, list[str]]:
    """instance_id -> episode directories holding a final scores.json (more than one = duplicate)."""
    out: dict[str, list[str]] = {}
    for scores in sorted(Path(arm_dir).glob("attempt-*/episodes/*/scores.json")):
        s, run = _read(scores), _read(scores.with_name("run.json"))
        if s and s.get("status") == "final" and run:
            iid = (run.get("instance") or {}).get("instance_id")
            if iid:
                out.setdefault(iid, []).append(str(scores.parent))
    return out


def coverage(lock: dict) -> dict:
    """Per arm: locked episodes missing a final result, duplicated, or not in the lock."""
    out_dir = Path(lock["output_dir"])
    report = {}
    for arm in lock["arms"]:
        locked = [i["instance_id"] for i in arm["instances"]]
        done = finished(out_dir / arm["arm_id"])
        report[arm["arm_id"]] = {
            "locked": len(locked), "finished": sum(1 for i in locked if i in done),
            "missing": [i for i in locked if i not in done],
            "duplicated": sorted(i for i, d in done.items() if len(d) > 1),
            "unexpected": sorted(set(done) - set(locked)),
            "attempts": len(list((out_dir / arm["arm_id"]).glob("attempt-*"))),
        }
    report["complete"] = all(not (v["missing"] or v["duplicated"] or v["unexpected"])
                             for v in report.values())
    return report


def _next_attempt(arm_dir: Path) -> Path:
    n = len(list(arm_dir.glob("attempt-*"))) + 1
    while (arm_dir / f"attempt-{n:03d}").exists():
        n += 1
    path = arm_dir / f"attempt-{n:03d}"
    path.mkdir(parents=True)
    return path


def _seen_instances(attempt_dir: Path) -> set[str]:
    seen = set()
    for run in attempt_dir.glob("episodes/*/run.json"):
        iid = ((_read(run) or {}).get("instance") or {}).get("instance_id")
        if iid:
            seen.add(iid)
    return seen


def _command(launcher, lock, arm, chunk_file: Path, n: int, out: Path) -> list[str]:
    args = {"episodes": n, "system": arm["system"], "condition": arm["condition"],
            "seed": lock["seeds"].get("launch", 0), "output_dir": str(out), "instances": str(chunk_file),
            **arm["args"]}
    return [*launcher, lock["launch_file"], *(f"{k}:={v}" for k, v in args.items())]


def run_campaign(lock: dict, launcher: list[str] | None = None, log=print) -> dict:
    """Verify, then launch every unfinished locked episode in chunks. Returns coverage."""
    diff = verify(lock)
    if diff:
        raise LockMismatch(diff)
    launcher = launcher or default_launcher()
    out_dir = Path(lock["output_dir"])
    out_dir.mkdir(parents=True, exist_ok=True)
    digest_file = out_dir / "LOCK_DIGEST"
    if digest_file.exists() and digest_file.read_text().strip() != lock["lock_sha256"]:
        raise LockMismatch({"output_dir": (digest_file.read_text().strip(), lock["lock_sha256"])})
    digest_file.write_text(lock["lock_sha256"] + "\n")
    _ledger(out_dir, {"record": "campaign_run", "lock_sha256": lock["lock_sha256"], "launcher": launcher})
    for arm in lock["arms"]:
        arm_dir = out_dir / arm["arm_id"]
        arm_dir.mkdir(exist_ok=True)
        done = finished(arm_dir)
        pending = [i for i in arm["instances"] if i["instance_id"] not in done]
        log(f"{arm['arm_id']}: {len(arm['instances']) - len(pending)} finished, {len(pending)} to run")
        size = max(1, lock["chunk_size"])
        for start in range(0, len(pending), size):
            chunk = pending[start:start + size]
            _launch_chunk(lock, arm, chunk, arm_dir, launcher, out_dir, log)
    cov = coverage(lock)
    _ledger(out_dir, {"record": "coverage", **cov})
    return cov


def _launch_chunk(lock, arm, chunk, arm_dir, launcher, out_dir, log) -> None:
    att = _next_attempt(arm_dir)
    chunk_file = att / "instances.locked.json"
    chunk_file.write_text(json.dumps({"schema": LIST_SCHEMA, "meta": {"campaign": lock["name"],
                                      "arm": arm["arm_id"], "lock_sha256": lock["lock_sha256"]},
                                      "instances": chunk}, sort_keys=True, indent=1) + "\n")
    cmd = _command(launcher, lock, arm, chunk_file, len(chunk), att)
    ids = [i["instance_id"] for i in chunk]
    # The arm's cell, so an attempt that dies before any run.json still counts in its cell.
    hint = {"tested_system": arm["system"], "task_condition": arm["condition"],
            "observation_condition": arm["args"].get("observation"),
            "intervention_mode": arm["args"].get("intervention_mode", "none"),
            "intervention_site": arm["args"].get("intervention_site")}
    info = {"arm": arm["arm_id"], "identity_hint": hint, "instances": ids, "command": cmd, "status": "running"}
    write_json_atomic(att / "attempt.json", info)
    _ledger(out_dir, {"record": "attempt_start", "attempt": str(att), "instances": ids})
    t0 = time.monotonic()
    with open(att / "launcher.log", "w", encoding="utf-8") as logf:
        try:
            rc = subprocess.run(cmd, stdout=logf, stderr=subprocess.STDOUT).returncode
        except OSError as exc:
            rc, info["error"] = -1, f"cannot start launcher: {exc}"
    wall = time.monotonic() - t0
    missing = [i for i in ids if i not in _seen_instances(att)]
    info.update(status="done", rc=rc, wall_s=wall, missing=missing)
    if rc != 0 and "error" not in info:
        info["error"] = f"launcher exit status {rc}"
    write_json_atomic(att / "attempt.json", info)
    _ledger(out_dir, {"record": "attempt_end", "attempt": str(att), "rc": rc, "wall_s": wall, "missing": missing})
    log(f"  {att.name}: {len(ids)} episodes, rc={rc}, {len(missing)} without a record")
