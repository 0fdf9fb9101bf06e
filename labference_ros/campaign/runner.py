"""Run a locked campaign through the launcher, resumably, on one or more workers.

Layout under the lock's output_dir:
    LOCK_DIGEST                       the lock this directory belongs to
    campaign.jsonl                    append-only ledger (run, attempt start / end / interrupted, coverage)
    <arm_id>/attempt-NNN/             one launcher call (its output_dir):
        instances.locked.json         the chunk of the locked list it was given
        attempt.json                  arm, command, ROS domain, worker, rc, wall_s, missing instances
        launcher.log                  the launcher's output
        worker_files.json             bags a shipped chunk left on its worker: host, path, sha256
        episodes/<episode_id>/...     written by the launcher

An episode is finished when some attempt holds its scores.json with status
"final". A (re)run launches only unfinished locked episodes, each attempt in a
fresh directory, so nothing finished is redone and no earlier attempt (failed,
errored or killed) is overwritten: every attempt stays in the records.

Only this process (the coordinator) writes the ledger and names attempt
directories; workers just run launchers (chunk.run_chunk). Chunks are cut
from the locked order before any worker starts, so which worker runs a chunk,
and when it finishes, changes nothing in its results. Each running chunk holds
a ROS domain of its own (ROS_DOMAIN_ID + worker slot), discovery stays on
localhost. A chunk whose launcher may outlive its result (its worker died)
leaves its domain unused for DOMAIN_HOLD_S, while that launcher stops.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tarfile
import time
from pathlib import Path

from labference_ros.core.records import write_json_atomic
from labference_ros.oracle.handoff import FULL_ROLLOUT
from labference_ros.oracle.supports import intervention_identity, parse_launch_support
from labference_ros.rosenv import loopback_environ

from . import sequential
from .chunk import LOG_NAME, STOP_GRACE_S, ChunkJob, Shipment, unpack_results
from .engine import failed_attempt, open_engine
from .lock import LockMismatch, verify
from .plan import (Chunk, SlotPool, base_domain_id, domain_ids, launch_command, next_attempt_name,
                   pending_chunks)

LAUNCHER_ENV = "LABFERENCE_LAUNCHER"
LIST_SCHEMA = 1
LEDGER = "campaign.jsonl"
# How long a domain whose launcher may still be stopping stays unused: a launcher
# stops its nodes within its grace period (10 s) of SIGTERM; twice a chunk's own
# grace period leaves a wide margin.
DOMAIN_HOLD_S = 2 * STOP_GRACE_S
# Fields of a scores.json that name the attempt rather than describe the result
# (episode ids carry the launcher's chunk index), left out when comparing runs.
ATTEMPT_FIELDS = frozenset({"episode_id"})
# Variables whose values never travel in a task: the job names them, the worker supplies them.
SECRET_NAME_RE = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
WORKER_FILES = "worker_files.json"
# With a chunk timeout, how much longer the runner waits for a chunk's result before giving
# up on its worker (stuck, or cut off): the worker's own stop of the launcher, then transfer.
RESULT_GRACE_S = STOP_GRACE_S + 30


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
    with open(out / LEDGER, "a", encoding="utf-8") as f:
        f.write(json.dumps({"t_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **record},
                           sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


def ledger_records(out_dir: Path) -> list[dict]:
    path = Path(out_dir) / LEDGER
    if not path.exists():
        return []
    # A runner killed mid-write leaves at most one torn last line: skip it.
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def unfinished_attempts(records: list[dict]) -> list[str]:
    """Attempts the ledger saw start but never end or get marked interrupted (a killed runner's)."""
    open_ = {}
    for r in records:
        if r.get("record") == "attempt_start":
            open_[r["attempt"]] = True
        elif r.get("record") in ("attempt_end", "attempt_interrupted"):
            open_.pop(r.get("attempt"), None)
    return list(open_)


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
    """Per arm: locked episodes missing a final result, duplicated, or not in the lock.
    In a sequential campaign an episode after its comparisons stopped is not needed
    (counted under `not_needed`, never missing), and `sequential` holds the decisions."""
    out_dir = Path(lock["output_dir"])
    report = {}
    decisions = sequential.state(lock, out_dir) if sequential.sequential_design(lock) else None
    want = sequential.needed(sequential.sequential_design(lock), decisions) if decisions is not None else {}
    for arm in lock["arms"]:
        locked = [i["instance_id"] for i in arm["instances"]]
        keep = want.get(arm["arm_id"])
        needed = locked if keep is None else [i for i in locked if i in keep]
        done = finished(out_dir / arm["arm_id"])
        report[arm["arm_id"]] = {
            "locked": len(locked), "finished": sum(1 for i in locked if i in done),
            "missing": [i for i in needed if i not in done],
            "duplicated": sorted(i for i, d in done.items() if len(d) > 1),
            "unexpected": sorted(set(done) - set(locked)),
            "attempts": len(list((out_dir / arm["arm_id"]).glob("attempt-*"))),
        }
        if keep is not None:
            report[arm["arm_id"]]["not_needed"] = len(locked) - len(needed)
    report["complete"] = all(not (v["missing"] or v["duplicated"] or v["unexpected"])
                             for v in report.values())
    if decisions is not None:
        report["sequential"] = decisions
    return report


def comparable_scores(scores: dict) -> dict:
    """A scores.json without the fields that identify the attempt, for comparing two runs."""
    return {k: v for k, v in scores.items() if k not in ATTEMPT_FIELDS}


def final_scores(lock: dict) -> dict[str, dict[str, dict]]:
    """arm_id -> instance_id -> its final scores.json without attempt-naming fields
    (what two runs of one lock must agree on, whoever ran which chunk)."""
    out_dir = Path(lock["output_dir"])
    result = {}
    for arm in lock["arms"]:
        done = finished(out_dir / arm["arm_id"])
        result[arm["arm_id"]] = {iid: comparable_scores(_read(Path(dirs[0]) / "scores.json"))
                                 for iid, dirs in sorted(done.items())}
    return result


def _seen_instances(attempt_dir: Path) -> set[str]:
    seen = set()
    for run in attempt_dir.glob("episodes/*/run.json"):
        iid = ((_read(run) or {}).get("instance") or {}).get("instance_id")
        if iid:
            seen.add(iid)
    return seen


def _open_output_dir(lock: dict) -> Path:
    out_dir = Path(lock["output_dir"])
    out_dir.mkdir(parents=True, exist_ok=True)
    digest_file = out_dir / "LOCK_DIGEST"
    if digest_file.exists() and digest_file.read_text().strip() != lock["lock_sha256"]:
        raise LockMismatch({"output_dir": (digest_file.read_text().strip(), lock["lock_sha256"])})
    digest_file.write_text(lock["lock_sha256"] + "\n")
    return out_dir


def _missing(attempt: Path, instances: list[str]) -> list[str]:
    """The attempt's instances without a run.json (never started): ERROR rows in the accounting."""
    seen = _seen_instances(attempt)
    return [i for i in instances if i not in seen]


def _mark_interrupted(out_dir: Path, log) -> None:
    """Close the ledger entries of attempts a killed runner left open; their records stay."""
    records = ledger_records(out_dir)
    started = {r["attempt"]: r for r in records if r.get("record") == "attempt_start"}
    for attempt in unfinished_attempts(records):
        info_path = Path(attempt) / "attempt.json"
        info = _read(info_path) or {}
        missing = _missing(Path(attempt), info.get("instances") or started[attempt].get("instances") or [])
        if info.get("status") == "running":
            write_json_atomic(info_path, {**info, "status": "interrupted", "missing": missing})
        _ledger(out_dir, {"record": "attempt_interrupted", "attempt": attempt, "missing": missing})
        log(f"  {Path(attempt).parent.name}/{Path(attempt).name}: interrupted by an earlier run (kept), "
            f"{len(missing)} without a record")


def identity_hint(arm: dict) -> dict:
    """The arm's cell (from its launch arguments), so an attempt that dies before any
    run.json still counts in its cell. Refuses a support argument that names no support."""
    support = str(arm["args"].get("support", "none"))
    try:
        identity = intervention_identity(parse_launch_support(support), FULL_ROLLOUT)
    except ValueError as exc:
        raise ValueError(f"arm {arm['arm_id']}: support:={support} is not a support condition ({exc})") from None
    return {"tested_system": arm["system"], "task_condition": arm["condition"],
            "observation_condition": arm["args"].get("observation"),
            "intervention_mode": identity["mode"], "intervention_site": identity.get("site"),
            "intervention_protocol": identity.get("protocol")}


def secret_names(environ: dict, required=()) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(required, optional) secret names: those asked for, and the environment's names that look like one."""
    required = tuple(dict.fromkeys(required))
    optional = tuple(sorted(n for n in environ if SECRET_NAME_RE.search(n) and n not in required))
    return required, optional


def lock_check(lock: dict) -> dict:
    """What a worker compares with itself before its first chunk of this campaign."""
    code = lock["code"]
    return {"lock_sha256": lock["lock_sha256"], "dependencies": lock["dependencies"],
            "code": {"root": code["root"], "paths": code["paths"], "content_sha256": code["content_sha256"]}}


def run_campaign(lock: dict, launcher: list[str] | None = None, log=print,
                 workers: int | None = None, scheduler: str | None = None, ship_results: bool | None = None,
                 secrets: tuple[str, ...] = (), chunk_timeout_s: float | None = None,
                 keep_bags: bool = False) -> dict:
    """Verify, then launch every unfinished locked episode in chunks. Returns coverage.

    workers=1 (default) runs chunks one after another in this process; more workers
    run them on a loopback-only local Dask cluster; `scheduler` (an address) uses an
    existing Dask scheduler instead. Results do not depend on either.

    ship_results (default: with a scheduler) runs each chunk in a private directory
    of its worker and brings its files back with the task; keep_bags leaves bags
    there (location and hash recorded). `secrets` names variables every chunk
    needs, resolved where it runs; variables that look like secrets are never sent
    either. chunk_timeout_s stops a chunk's launcher past that many seconds.
    """
    diff = verify(lock)
    if diff:
        raise LockMismatch(diff)
    # Everything a launch needs is checked before anything is written or started.
    hints = {arm["arm_id"]: identity_hint(arm) for arm in lock["arms"]}
    # The launchers' environment, taken before any cluster starts: a local Dask
    # cluster's nannies write OMP_NUM_THREADS, PYTHONHASHSEED, ... into this process too.
    base_env = loopback_environ(os.environ)
    # Without the user's ROS_DOMAIN_ID each launcher claims a free domain itself
    # (domain_locks.py, as any `labference launch` does); with it, chunks run
    # on that domain and the next ones, and each launcher locks the one it is given.
    claim_own = os.environ.get("ROS_DOMAIN_ID") is None
    if claim_own:
        del base_env["ROS_DOMAIN_ID"]
    base_domain = 0 if claim_own else base_domain_id(base_env["ROS_DOMAIN_ID"])
    required, optional = secret_names(base_env, secrets)
    for name in (*required, *optional):
        base_env.pop(name, None)
    ship = scheduler is not None if ship_results is None else ship_results
    if keep_bags and not ship:
        raise ValueError("bags can stay on the worker only with shipped results (--ship-results)")
    job_options = {"secrets_required": required, "secrets_optional": optional, "timeout_s": chunk_timeout_s,
                   "ship": Shipment(files={}, lock_check=lock_check(lock), keep_bags=keep_bags) if ship else None}
    launcher = launcher or default_launcher()
    out_dir = _open_output_dir(lock)
    _mark_interrupted(out_dir, log)
    done = {arm["arm_id"]: finished(out_dir / arm["arm_id"]) for arm in lock["arms"]}
    for arm in lock["arms"]:
        left = sum(1 for i in arm["instances"] if i["instance_id"] not in done[arm["arm_id"]])
        log(f"{arm['arm_id']}: {len(arm['instances']) - left} finished, {left} to run")
    seq = sequential.sequential_design(lock)
    decisions = _sequential_update(lock, out_dir, None, log) if seq else None
    # A sequential campaign runs only what its comparisons still need, both arms in step.
    chunks = sequential.pending_chunks(lock, done, decisions) if seq else pending_chunks(lock, done)
    if workers is not None and scheduler is None and not claim_own:
        domain_ids(base_domain, workers)  # refuse an impossible domain range before starting a cluster
    with open_engine(workers, scheduler) as engine:
        # Self-claiming launchers: the pool only counts running chunks (its ids are slot numbers).
        slots = SlotPool(list(range(engine.slots)) if claim_own else domain_ids(base_domain, engine.slots))
        _ledger(out_dir, {"record": "campaign_run", "lock_sha256": lock["lock_sha256"], "launcher": launcher,
                          "engine": engine.description, "slots": engine.slots})
        log(f"{len(chunks)} chunk(s) on {engine.description}")
        queue, running, overdue_at = list(chunks), {}, {}
        while queue or running:
            while queue and slots:
                chunk = queue.pop(0)
                if seq and not sequential.still_needed(lock, chunk, decisions):
                    _ledger(out_dir, {"record": "chunk_skipped", "arm": chunk.arm["arm_id"],
                                      "instances": chunk.instance_ids, "reason": "sequential comparison stopped"})
                    log(f"  {chunk.arm['arm_id']}: {len(chunk.instances)} episodes not run, their comparison stopped")
                    continue
                slot = slots.take()
                domain = None if claim_own else slot
                env = dict(base_env) if claim_own else {**base_env, "ROS_DOMAIN_ID": str(domain)}
                attempt, info, job = _start_attempt(lock, chunk, launcher, out_dir, domain, env,
                                                    hints[chunk.arm["arm_id"]], job_options)
                info["slot"] = slot
                handle = engine.submit(job, key=f"{lock['lock_sha256'][:12]}/{chunk.arm['arm_id']}/{attempt.name}")
                running[handle] = (attempt, info)
                if chunk_timeout_s is not None:
                    overdue_at[handle] = time.monotonic() + chunk_timeout_s + RESULT_GRACE_S
            # Chunks wait only for domains held back: wake when the first is free again.
            wake = slots.seconds_to_release() if queue else None
            if not running:
                if wake is not None:  # None: every queued chunk was skipped, nothing left to wait for
                    time.sleep(wake)
                continue
            if overdue_at:
                due = max(0.0, min(overdue_at.values()) - time.monotonic())
                wake = due if wake is None else min(wake, due)
            ended = engine.wait_any(running, timeout=wake)
            for handle, when in list(overdue_at.items()):
                if when <= time.monotonic() and handle in running and handle not in {h for h, _ in ended}:
                    engine.cancel(handle)
                    ended.append((handle, failed_attempt("no result", TimeoutError(
                        f"none within {chunk_timeout_s:g} s + {RESULT_GRACE_S:g} s; worker stuck or cut off"))))
            for handle, result in ended:
                overdue_at.pop(handle, None)
                attempt, info = running.pop(handle)
                # A claimed domain stays locked while its launcher's processes live: no hold needed.
                hold = DOMAIN_HOLD_S if result.get("launcher_may_live") and not claim_own else 0.0
                slots.give_back(info.pop("slot"), hold_s=hold)
                if claim_own:
                    info["ros_domain_id"] = result.get("ros_domain_id")
                result = _merge_shipped(attempt, result)
                _end_attempt(out_dir, attempt, info, result, log)
                if seq:
                    decisions = _sequential_update(lock, out_dir, decisions, log)
                if hold:
                    log(f"  ROS domain {info['ros_domain_id']} unused for {hold:.0f} s: "
                        f"the launcher of {attempt.parent.name}/{attempt.name} may still be stopping")
    cov = coverage(lock)
    _ledger(out_dir, {"record": "coverage", **cov})
    return cov


def _sequential_update(lock: dict, out_dir: Path, previous, log) -> list[dict]:
    """The comparisons' decisions now; a stop not yet in the ledger is recorded with its reason."""
    decisions = sequential.state(lock, out_dir)
    recorded = {(r.get("candidate"), r.get("reference")) for r in ledger_records(out_dir)
                if r.get("record") == "sequential_stop"}
    for i, d in enumerate(decisions):
        if previous is None:
            log(sequential.format_decision(d))
        if d["status"] != "running" and (d["candidate"], d["reference"]) not in recorded:
            _ledger(out_dir, {"record": "sequential_stop", **d})
            if previous is not None:
                log(sequential.format_decision(d))
    return decisions


def _merge_shipped(attempt: Path, result: dict) -> dict:
    """A shipped chunk's files into its attempt directory (bags left on the worker listed there)."""
    payload = result.pop("payload", None)
    kept = result.pop("kept_on_worker", None)
    if payload is None:
        return result
    try:
        unpack_results(payload, attempt)
    except (OSError, ValueError, EOFError, tarfile.TarError) as exc:
        return {**result, "rc": -1, "error": f"results of the chunk could not be merged: {exc}"}
    if kept:
        write_json_atomic(attempt / WORKER_FILES, {"host": result.get("host"), "worker": result.get("worker"),
                                                   "files": kept})
    return result


def _start_attempt(lock: dict, chunk: Chunk, launcher, out_dir: Path, domain: int, env: dict, hint: dict,
                   job_options: dict):
    """Name and fill the attempt directory here, in the coordinator: workers never race for names."""
    arm = chunk.arm
    arm_dir = out_dir / arm["arm_id"]
    arm_dir.mkdir(exist_ok=True)
    attempt = arm_dir / next_attempt_name(p.name for p in arm_dir.iterdir())
    attempt.mkdir()
    chunk_file = attempt / "instances.locked.json"
    chunk_file.write_text(json.dumps({"schema": LIST_SCHEMA, "meta": {"campaign": lock["name"],
                                      "arm": arm["arm_id"], "lock_sha256": lock["lock_sha256"],
                                      "design": lock.get("design") or {"kind": "fixed"},
                                      # how many instances the arm's population lost at certification
                                      "population_certification": arm.get("population_certification")},
                                      "instances": list(chunk.instances)}, sort_keys=True, indent=1) + "\n")
    cmd = launch_command(launcher, lock, arm, str(chunk_file), len(chunk.instances), str(attempt))
    info = {"arm": arm["arm_id"], "identity_hint": hint, "instances": chunk.instance_ids, "command": cmd,
            "ros_domain_id": domain, "status": "running"}
    write_json_atomic(attempt / "attempt.json", info)
    _ledger(out_dir, {"record": "attempt_start", "attempt": str(attempt), "instances": chunk.instance_ids,
                      "ros_domain_id": domain})
    ship = job_options["ship"]
    if ship is not None:  # the worker gets the chunk's list with the job, not from this directory
        ship = Shipment(files={chunk_file.name: chunk_file.read_bytes()}, lock_check=ship.lock_check,
                        keep_bags=ship.keep_bags)
    return attempt, info, ChunkJob(command=cmd, attempt_dir=str(attempt), ros_domain_id=domain, env=env,
                                   **{**job_options, "ship": ship})


def launcher_error(log_path: Path) -> str:
    """The launcher's last error line in its log ('' when it printed none)."""
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    errors = [line.strip() for line in lines if line.lstrip().lower().startswith("error")]
    return errors[-1] if errors else ""


def _end_attempt(out_dir: Path, attempt: Path, info: dict, result: dict, log) -> None:
    missing = _missing(attempt, info["instances"])
    rc = result.get("rc")
    info = {**info, "status": "done", "rc": rc, "wall_s": result.get("wall_s"), "missing": missing,
            "worker": result.get("worker"), "host": result.get("host")}
    if result.get("error"):
        info["error"] = result["error"]
    write_json_atomic(attempt / "attempt.json", info)
    _ledger(out_dir, {"record": "attempt_end", "attempt": str(attempt), "rc": rc, "wall_s": result.get("wall_s"),
                      "missing": missing, "worker": result.get("worker")})
    log(f"  {attempt.parent.name}/{attempt.name}: {len(info['instances'])} episodes, rc={rc}, "
        f"{len(missing)} without a record (ROS domain {info['ros_domain_id']})")
    if rc != 0:
        why = launcher_error(attempt / LOG_NAME) or result.get("error")
        if why:
            log(f"    {why}")
