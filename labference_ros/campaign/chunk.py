"""Run one chunk's launcher: in the campaign process, or inside a Dask worker.

The launcher dies with the process that started it (PR_SET_PDEATHSIG): when a
campaign runner is SIGKILLed, its local Dask worker processes exit at once
(distributed's parent-alive pipe) and the kernel then sends every launcher
SIGTERM, which the launcher forwards to its nodes before it exits. Without it
the launchers are reparented to init and go on writing into the campaign
directory. SIGTERM rather than SIGKILL lets the launcher stop its node
sessions (grandchildren included); it kills what does not stop within its
grace period.

A worker that belongs to an external scheduler outlives a killed runner; there
the chunk watches its own Dask task and stops the launcher the same way once
the scheduler cancels it (the runner's client disconnected).

The launcher's environment comes with the job, built by the runner before
any worker started: a Dask worker's own environment differs from the runner's
(its nanny sets OMP_NUM_THREADS, PYTHONHASHSEED, ...), and the launcher must
see the same one whichever engine runs it. Secrets are the exception: the job
names them, never carries their values; the chunk takes each from the
environment of the process running it, or from the operator's secret file
($LABFERENCE_SECRETS_FILE, NAME=value lines), and refuses to start without a
required one.

A shipped job (a worker that need not see the campaign directory) runs its
launcher in a private temporary directory of the worker, after checking that
the worker's code and dependencies are those the campaign locked; the
attempt's files travel back as the task's result (a gzip tar), which the runner
unpacks into the attempt directory. A chunk that never returns merges nothing.
"""
from __future__ import annotations

import ctypes
import hashlib
import io
import os
import re
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PR_SET_PDEATHSIG = 1
CANCEL_POLL_S = 1.0
STOP_GRACE_S = 30.0
LOG_NAME = "launcher.log"
SECRETS_FILE_ENV = "LABFERENCE_SECRETS_FILE"
CODE_ROOT_ENV = "LABFERENCE_CODE_ROOT"  # a worker's checkout, when not at the runner's path
WORKER_DIR_ENV = "LABFERENCE_WORKER_DIR"  # where a worker makes its chunks' private directories
BAG_SUFFIXES = (".mcap",)


def _resolve_prctl():
    """libc's prctl, looked up here in the parent: loading a library after fork in a
    multithreaded worker can deadlock on the loader's lock."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
    prctl.restype = ctypes.c_int
    return prctl


_PRCTL = _resolve_prctl()


@dataclass(frozen=True)
class Shipment:
    """What a worker without the campaign directory needs, and what it sends back."""
    files: dict[str, bytes]  # placed in the private directory before the launch (the chunk's instance list)
    lock_check: dict  # lock_sha256, code (root, paths, content_sha256), dependencies
    keep_bags: bool = False  # leave bags on the worker; their location and hash travel back


@dataclass(frozen=True)
class ChunkJob:
    command: list[str]
    attempt_dir: str
    ros_domain_id: int | None  # None: the launcher claims a free domain and says which in its log
    env: dict[str, str]  # the launcher's environment (ROS_DOMAIN_ID = ros_domain_id when set), without secrets
    secrets_required: tuple[str, ...] = ()  # names resolved where the chunk runs; missing: refused
    secrets_optional: tuple[str, ...] = ()  # names resolved where the chunk runs when set there
    timeout_s: float | None = None  # the launcher is stopped past it
    ship: Shipment | None = field(default=None)


def _die_with_parent(parent_pid: int):
    def set_parent_death_signal() -> None:
        # Runs in the child before exec. PDEATHSIG follows the thread that forked,
        # which is the chunk's own thread and lives as long as the launcher runs.
        if _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
            os.write(2, b"labference campaign: prctl(PR_SET_PDEATHSIG) failed; launcher not started\n")
            os._exit(125)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)
    return set_parent_death_signal


def _dask_task_cancelled() -> bool:
    """True when this runs as a Dask task the scheduler no longer wants."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return False  # not inside a worker
    try:
        task = worker.state.tasks.get(worker.get_current_task())
    except Exception:  # noqa: BLE001 - worker internals differ between versions: do not guess
        return False
    return task is None or task.state in ("cancelled", "released", "forgotten")


def _worker_name() -> str | None:
    try:
        from distributed import get_worker

        return str(get_worker().name)
    except (ImportError, ValueError):
        return None


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def claimed_domain(log_path: Path) -> int | None:
    """The ROS domain a launcher said it claimed (`[launch] ROS domain N (...)`)."""
    try:
        text = log_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = re.search(r"^\[launch\] ROS domain (\d+) ", text, re.MULTILINE)
    return int(found.group(1)) if found else None


def read_secrets_file(path: str | None) -> dict[str, str]:
    """NAME=value lines (blank lines and # comments skipped) of the operator's secret file."""
    if not path:
        return {}
    out = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            name, value = line.split("=", 1)
            out[name.strip()] = value.strip()
    return out


def resolve_secrets(job: ChunkJob, environ=os.environ) -> tuple[dict[str, str], list[str]]:
    """The job's secrets from this process's environment or its secret file; and the required ones missing."""
    try:
        from_file = read_secrets_file(environ.get(SECRETS_FILE_ENV))
    except OSError:
        from_file = {}
    found = {}
    for name in (*job.secrets_required, *job.secrets_optional):
        value = environ.get(name, from_file.get(name))
        if value is not None:
            found[name] = value
    return found, [n for n in job.secrets_required if n not in found]


_LOCK_CHECKED: dict[str, str | None] = {}  # lock digest -> this worker's refusal (None: it matches)


def lock_refusal(check: dict) -> str | None:
    """Why this worker cannot run the locked campaign's chunks (code or dependencies differ); None if it can.
    Checked once per lock and worker process, before its first chunk."""
    digest = check["lock_sha256"]
    if digest not in _LOCK_CHECKED:
        from .lock import PACKAGE_ROOT, code_state, dependency_versions

        code = check["code"]
        root = os.environ.get(CODE_ROOT_ENV) or (code["root"] if Path(code["root"]).is_dir() else str(PACKAGE_ROOT))
        differences = []
        here = code_state(Path(root), code["paths"])["content_sha256"]
        if here != code["content_sha256"]:
            differences.append(f"code under {root} hashes {here[:12]}, locked {code['content_sha256'][:12]}")
        versions = dependency_versions(check["dependencies"].keys())
        differences += [f"{name} {versions[name]} here, locked {locked}"
                        for name, locked in sorted(check["dependencies"].items()) if versions[name] != locked]
        _LOCK_CHECKED[digest] = "; ".join(differences) or None
    return _LOCK_CHECKED[digest]


def _private_dir() -> Path:
    base = os.environ.get(WORKER_DIR_ENV)
    if not base:
        try:
            from distributed import get_worker

            base = get_worker().local_directory
        except (ImportError, ValueError):
            base = None
    return Path(tempfile.mkdtemp(prefix="labference-chunk-", dir=base))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pack_results(private: Path, sent: set[str], keep_bags: bool) -> tuple[bytes, list[dict]]:
    """The private directory's files as a gzip tar (less what the runner sent); bags kept here are listed instead."""
    kept = []
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(p for p in private.rglob("*") if p.is_file() and not p.is_symlink()):
            rel = path.relative_to(private).as_posix()
            if rel in sent:
                continue
            if keep_bags and path.suffix in BAG_SUFFIXES:
                kept.append({"path": rel, "worker_path": str(path), "sha256": _sha256(path),
                             "bytes": path.stat().st_size})
                continue
            tar.add(path, arcname=rel, recursive=False)
    return buffer.getvalue(), kept


def unpack_results(payload: bytes, attempt: Path) -> None:
    """A shipped chunk's files into its attempt directory, all at once: unpacked beside it first, then
    each top-level entry renamed in, so an interrupted unpack leaves no half-merged episode behind."""
    staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=attempt.parent))
    try:
        with tarfile.open(fileobj=io.BytesIO(payload), mode="r:gz") as tar:
            tar.extractall(staging, filter="data")  # refuses absolute paths, .. and links out
        for entry in sorted(staging.iterdir()):
            target = attempt / entry.name
            if target.exists():
                raise FileExistsError(f"{target} exists; a shipped result never overwrites")
            entry.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _launch(job: ChunkJob, command: list[str], env: dict, logf) -> tuple[int | None, str | None]:
    """Run the launcher to its end; its rc and why it was stopped (None: it ended by itself)."""
    proc = subprocess.Popen(command, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env, preexec_fn=_die_with_parent(os.getpid()))
    deadline = None if job.timeout_s is None else time.monotonic() + job.timeout_s
    while True:
        try:
            return proc.wait(CANCEL_POLL_S), None
        except subprocess.TimeoutExpired:
            if _dask_task_cancelled():
                _stop(proc)
                return proc.returncode, "cancelled by the scheduler (campaign runner gone)"
            if deadline is not None and time.monotonic() > deadline:
                _stop(proc)
                return proc.returncode, f"chunk timed out after {job.timeout_s:g} s; launcher stopped"


def run_chunk(job: ChunkJob) -> dict:
    """Start the launcher with the chunk's ROS domain, wait for it; rc, wall_s, where it ran
    (and, for a shipped job, its files as `payload`)."""
    where = {"host": socket.gethostname(), "worker": _worker_name(), "ros_domain_id": job.ros_domain_id}
    secrets, missing = resolve_secrets(job)
    if missing:
        return {**where, "rc": -1, "wall_s": None,
                "error": f"refused on {where['host']}: secret {missing[0]} is not set there "
                         f"(its environment or ${SECRETS_FILE_ENV})"}
    env = {**job.env, **secrets}
    if job.ship is not None:
        return _run_shipped(job, env, where)
    attempt = Path(job.attempt_dir)
    try:
        # Exclusive: a scheduler that re-runs a task after a worker died must not start
        # a second launcher into an attempt that already began.
        logf = open(attempt / LOG_NAME, "x", encoding="utf-8")
    except FileExistsError:
        # Its first launcher may still be stopping (its worker died): hold its domain back.
        return {**where, "rc": -1, "wall_s": None, "error": "attempt already started elsewhere; not rerun",
                "launcher_may_live": True}
    return _run_in(job, job.command, env, attempt, where, logf)


def _run_in(job: ChunkJob, command: list[str], env: dict, attempt: Path, where: dict, logf=None) -> dict:
    t0 = time.monotonic()
    with logf or open(attempt / LOG_NAME, "x", encoding="utf-8") as log_file:
        if _PRCTL is None:
            return {**where, "rc": -1, "wall_s": 0.0,
                    "error": "cannot start launcher: no prctl here to tie it to this process"}
        try:
            rc, stopped = _launch(job, command, env, log_file)
        except OSError as exc:
            return {**where, "rc": -1, "wall_s": time.monotonic() - t0, "error": f"cannot start launcher: {exc}"}
    result = {**where, "rc": rc, "wall_s": time.monotonic() - t0}
    if job.ros_domain_id is None:
        result["ros_domain_id"] = claimed_domain(attempt / LOG_NAME)
    if stopped:
        result["error"] = stopped
    elif rc != 0:
        result["error"] = f"launcher exit status {rc}"
    return result


def _run_shipped(job: ChunkJob, env: dict, where: dict) -> dict:
    """The launcher in a private directory of this worker; the attempt's files come back as the result.
    The runner's attempt path in the command stands for the private directory."""
    refusal = lock_refusal(job.ship.lock_check)
    if refusal:
        return {**where, "rc": -1, "wall_s": None,
                "error": f"refused on {where['host']}: this worker differs from the campaign lock ({refusal})"}
    scratch = _private_dir()
    # <arm>/<attempt> as in the campaign directory: records that name them read the same.
    private = scratch / Path(job.attempt_dir).parent.name / Path(job.attempt_dir).name
    private.mkdir(parents=True)
    keep = False
    try:
        for name, data in job.ship.files.items():
            (private / name).write_bytes(data)
        command = [arg.replace(job.attempt_dir, str(private)) for arg in job.command]
        env = {k: v.replace(job.attempt_dir, str(private)) for k, v in env.items()}
        result = _run_in(job, command, env, private, where)
        payload, kept = pack_results(private, set(job.ship.files), job.ship.keep_bags)
        result["payload"] = payload
        if kept:
            result["kept_on_worker"] = kept
            keep = True
        return result
    finally:
        if keep:  # only the bags stay, where the record says they are
            for path in sorted(private.rglob("*"), reverse=True):
                if path.is_file() and path.suffix not in BAG_SUFFIXES:
                    path.unlink()
        else:
            shutil.rmtree(scratch, ignore_errors=True)
