"""Campaigns on workers that do not share the campaign directory: results come back
with the task, workers check the lock, secrets are named in tasks and never sent,
chunks are bounded in time, and a lost worker merges nothing."""
from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from labference_ros.campaign import chunk, engine
from labference_ros.campaign.lock import read_lock
from labference_ros.campaign.runner import coverage, final_scores, ledger_records, run_campaign
from labference_ros.cli.main import main
from test_campaign import FAKE, campaign_domain, locked_campaign  # noqa: F401 (campaign_domain: autouse fixture)
from test_campaign_workers import ARM, ITEMS, _env_events, _launched, _poll, _quiet, _set_aside, fake_env  # noqa: F401

SECRET_NAME = "LAB_POLICY_API_KEY"
SECRET_VALUE = "s3cr3t-9f1c2e7a-never-on-the-wire"
SCHEDULER_ENV = "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES"


def _files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def remote_cluster(fake_env):
    """A scheduler and two workers in processes of their own, working in a directory that is not the
    campaign's, without the runner's secret (they get it from the operator's secret file); a worker lost
    is not replaced by a rerun of its task (allowed failures 0)."""
    dask = str(Path(sys.executable).with_name("dask"))
    home = fake_env / "worker-home"
    home.mkdir()
    secrets = fake_env / "operator-secrets.env"
    secrets.write_text(f"# placed by the operator\n{SECRET_NAME}={SECRET_VALUE}\n")
    env = {k: v for k, v in os.environ.items() if k != SECRET_NAME}
    env.update({chunk.SECRETS_FILE_ENV: str(secrets), SCHEDULER_ENV: "0"})
    sched_file = fake_env / "scheduler.json"
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(sched_file)], env=env, cwd=home, stderr=subprocess.DEVNULL)]
    try:
        _poll(sched_file.exists, what="the scheduler file")
        procs.append(subprocess.Popen([dask, "worker", "--scheduler-file", str(sched_file), "--nworkers", "2",
                                       "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard",
                                       "--local-directory", str(home)], env=env, cwd=home,
                                      stderr=subprocess.DEVNULL))
        address = json.loads(sched_file.read_text())["address"]
        from distributed import Client

        with Client(address) as client:
            client.wait_for_workers(2, timeout=120)
        yield address, home
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            _stop_tree(p)


def _stop_tree(proc: subprocess.Popen) -> None:
    """A dask process the test started, and what it started, once SIGTERM is not enough
    (a worker whose nanny is still replacing a killed worker can outwait it)."""
    try:
        proc.wait(30)
        return
    except subprocess.TimeoutExpired:
        pass
    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        children = []
    for child in children:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    proc.kill()
    proc.wait(30)


def test_scheduler_workers_without_the_campaign_directory_send_every_result_back(fake_env, remote_cluster,
                                                                                  monkeypatch):
    address, home = remote_cluster
    lock = read_lock(locked_campaign(fake_env, ITEMS))
    monkeypatch.setenv("FAKE_WRONG_IDS", "i4")  # results that differ per instance
    assert run_campaign(lock, FAKE, log=_quiet, workers=1)["complete"]
    one = _set_aside(lock, "runs-one-worker")
    local_attempt = Path(lock["output_dir"]).with_name("runs-one-worker") / ARM / "attempt-001"
    (fake_env / "env.txt").unlink()

    monkeypatch.setenv(SECRET_NAME, SECRET_VALUE)  # the runner has it too; it is never sent
    res = CliRunner().invoke(main, ["campaign", "run", str(Path(fake_env / "spec.lock.json")), "--scheduler", address,
                                    "--launcher", " ".join(FAKE), "--secret", SECRET_NAME])
    assert res.exit_code == 0, res.output
    cov = coverage(lock)
    assert cov["complete"] and cov[ARM]["attempts"] == 3
    assert final_scores(lock) == one

    # The launchers wrote into private directories of the workers, never into the campaign directory.
    starts = [e for e in _env_events(fake_env / "env.txt") if e["event"] == "start"]
    assert len(starts) == 3
    assert all(Path(e["attempt"]).is_relative_to(home) and Path(e["attempt"]).parent.name == ARM and
               Path(e["attempt"]).parents[1].name.startswith("labference-chunk-") for e in starts)
    assert sorted(Path(e["attempt"]).name for e in starts) == ["attempt-001", "attempt-002", "attempt-003"]
    assert all(e["env"][SECRET_NAME] == SECRET_VALUE for e in starts)  # resolved from the worker's secret file
    assert not list(home.rglob("labference-chunk-*"))  # nothing left behind on the worker

    # Each attempt holds what a local run's does: the same files, the same records apart from the attempt's name.
    shipped_attempt = Path(lock["output_dir"]) / ARM / "attempt-001"
    assert sorted(_files_under(shipped_attempt)) == sorted(_files_under(local_attempt))
    for name in ("instances.json", "summary.json", "instances.locked.json"):
        assert (shipped_attempt / name).read_bytes() == (local_attempt / name).read_bytes()
    assert (shipped_attempt / "launcher.log").exists()
    info = json.loads((shipped_attempt / "attempt.json").read_text())
    assert info["rc"] == 0 and info["missing"] == [] and info["host"]
    # No record holds the secret.
    assert not any(SECRET_VALUE.encode() in data for data in _files_under(Path(lock["output_dir"])).values())


def test_a_worker_lost_mid_chunk_merges_nothing_and_a_later_run_redoes_it(fake_env, remote_cluster, monkeypatch):
    address, home = remote_cluster
    lock = read_lock(locked_campaign(fake_env, ITEMS))
    assert run_campaign(lock, FAKE, log=_quiet, workers=1)["complete"]
    one = _set_aside(lock, "runs-one-worker")
    (fake_env / "launched.txt").unlink()

    # Chunk [i2, i3] finishes i2 in the worker's private directory, then hangs in i3: its worker dies.
    monkeypatch.setenv("FAKE_HANG_IDS", "i3")
    pid_file = fake_env / "i3.pid"

    def kill_the_worker_once_hanging():
        pid = int(_poll(lambda: pid_file.exists() and pid_file.read_text(), what="i3 mid-episode"))
        worker = psutil.Process(pid).parent()
        worker.send_signal(signal.SIGKILL)

    import threading

    killer = threading.Thread(target=kill_the_worker_once_hanging)
    killer.start()
    cov = run_campaign(lock, FAKE, log=_quiet, scheduler=address)
    killer.join()
    assert cov[ARM]["missing"] == ["i2", "i3"]  # i2 finished on the lost worker, but nothing came back
    assert not list((Path(lock["output_dir"]) / ARM).glob("*/episodes/*-i2"))
    ends = [r for r in ledger_records(Path(lock["output_dir"])) if r["record"] == "attempt_end"]
    assert sum(r["rc"] == -1 for r in ends) == 1
    _poll(lambda: not chunk_launchers(home), what="the lost worker's launcher to stop")

    monkeypatch.delenv("FAKE_HANG_IDS")
    cov = run_campaign(lock, FAKE, log=_quiet, scheduler=address)
    assert cov["complete"] and not cov[ARM]["duplicated"]
    assert _launched(fake_env / "launched.txt")[-2:] == ["i2", "i3"]
    assert final_scores(lock) == one


def chunk_launchers(home: Path) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(str(home) in part for part in proc.info["cmdline"] or ()) and "fake_launcher.py" in " ".join(
                    proc.info["cmdline"]) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


# -- in this process, the same job a worker gets ------------------------------------------
def _capture_jobs(monkeypatch) -> list[bytes]:
    """Every job as the engine would send it (pickled), then run as usual."""
    sent, real = [], engine.run_chunk

    def pickled_then_run(job):
        sent.append(pickle.dumps(job))
        return real(pickle.loads(sent[-1]))

    monkeypatch.setattr(engine, "run_chunk", pickled_then_run)
    return sent


def test_task_payloads_name_secrets_and_never_carry_them(fake_env, monkeypatch):
    lock = read_lock(locked_campaign(fake_env, ITEMS))
    monkeypatch.setenv(SECRET_NAME, SECRET_VALUE)
    monkeypatch.setenv("VENDOR_TOKEN", "tok-" + SECRET_VALUE[::-1])  # looks like a secret: never sent either
    sent = _capture_jobs(monkeypatch)
    cov = run_campaign(lock, FAKE, log=_quiet, workers=1, ship_results=True, secrets=(SECRET_NAME,))
    assert cov["complete"] and len(sent) == 3
    for payload in sent:
        assert SECRET_VALUE.encode() not in payload and SECRET_VALUE[::-1].encode() not in payload
        assert SECRET_NAME.encode() in payload and b"VENDOR_TOKEN" in payload  # the names travel
    starts = [e["env"] for e in _env_events(fake_env / "env.txt") if e["event"] == "start"]
    assert all(env[SECRET_NAME] == SECRET_VALUE and env["VENDOR_TOKEN"].startswith("tok-") for env in starts)
    assert not any(SECRET_VALUE.encode() in data for data in _files_under(Path(lock["output_dir"])).values())


def test_a_chunk_naming_a_missing_secret_is_refused_naming_it(fake_env, monkeypatch):
    lock = read_lock(locked_campaign(fake_env, ITEMS))
    monkeypatch.delenv(SECRET_NAME, raising=False)
    monkeypatch.delenv(chunk.SECRETS_FILE_ENV, raising=False)
    cov = run_campaign(lock, FAKE, log=_quiet, workers=1, ship_results=True, secrets=(SECRET_NAME,))
    assert cov[ARM]["finished"] == 0 and _launched(fake_env / "launched.txt") == []
    info = json.loads((Path(lock["output_dir"]) / ARM / "attempt-001" / "attempt.json").read_text())
    assert info["rc"] == -1 and f"secret {SECRET_NAME} is not set there" in info["error"]

    # The operator's secret file on the worker is enough.
    secrets = fake_env / "secrets.env"
    secrets.write_text(f"{SECRET_NAME} = from-the-file\n")
    monkeypatch.setenv(chunk.SECRETS_FILE_ENV, str(secrets))
    assert run_campaign(lock, FAKE, log=_quiet, workers=1, ship_results=True, secrets=(SECRET_NAME,))["complete"]
    starts = [e["env"] for e in _env_events(fake_env / "env.txt") if e["event"] == "start"]
    assert starts and all(env[SECRET_NAME] == "from-the-file" for env in starts)


def test_a_worker_whose_code_differs_from_the_lock_refuses_before_its_first_chunk(fake_env, monkeypatch):
    lock = read_lock(locked_campaign(fake_env, ITEMS))
    elsewhere = fake_env / "worker-checkout"
    shutil.copytree(fake_env / "code", elsewhere)
    (elsewhere / "pkg" / "scorer.py").write_text("THRESHOLD = 2.0\n")  # an edit the lock does not hold
    monkeypatch.setenv(chunk.CODE_ROOT_ENV, str(elsewhere))
    monkeypatch.setattr(chunk, "_LOCK_CHECKED", {})
    cov = run_campaign(lock, FAKE, log=_quiet, workers=1, ship_results=True)
    assert cov[ARM]["finished"] == 0 and _launched(fake_env / "launched.txt") == []
    info = json.loads((Path(lock["output_dir"]) / ARM / "attempt-001" / "attempt.json").read_text())
    assert info["rc"] == -1 and "differs from the campaign lock" in info["error"]
    assert f"code under {elsewhere} hashes" in info["error"]

    # The same checkout as the lock's: it runs.
    monkeypatch.setenv(chunk.CODE_ROOT_ENV, str(fake_env / "code"))
    monkeypatch.setattr(chunk, "_LOCK_CHECKED", {})
    assert run_campaign(lock, FAKE, log=_quiet, workers=1, ship_results=True)["complete"]


def test_a_worker_whose_dependencies_differ_refuses_naming_them(tmp_path):
    check = {"lock_sha256": "x" * 64, "dependencies": {"numpy": "0.0.1"},
             "code": {"root": str(tmp_path), "paths": ["absent"], "content_sha256": chunk_hash_of_nothing()}}
    job = chunk.ChunkJob(command=["/bin/true"], attempt_dir=str(tmp_path / "attempt"), ros_domain_id=7, env={},
                         ship=chunk.Shipment(files={}, lock_check=check))
    result = chunk.run_chunk(job)
    assert result["rc"] == -1 and "numpy" in result["error"] and "locked 0.0.1" in result["error"]


def chunk_hash_of_nothing() -> str:
    import hashlib

    return hashlib.sha256().hexdigest()


def test_a_stuck_chunk_is_stopped_at_its_timeout(fake_env, monkeypatch):
    lock = read_lock(locked_campaign(fake_env, ITEMS))
    monkeypatch.setenv("FAKE_HANG_IDS", "i3")
    cov = run_campaign(lock, FAKE, log=_quiet, workers=1, ship_results=True, chunk_timeout_s=3)
    assert cov[ARM]["missing"] == ["i3"]  # i2 finished before the chunk stuck, and came back
    info = json.loads((Path(lock["output_dir"]) / ARM / "attempt-002" / "attempt.json").read_text())
    assert "chunk timed out after 3 s" in info["error"]
    assert not psutil.pid_exists(int((fake_env / "i3.pid").read_text())) or \
        psutil.Process(int((fake_env / "i3.pid").read_text())).status() == psutil.STATUS_ZOMBIE


def test_bags_can_stay_on_the_worker_with_their_location_and_hash(tmp_path):
    private = tmp_path / "private"
    (private / "episodes" / "e1" / "bag").mkdir(parents=True)
    (private / "episodes" / "e1" / "bag" / "bag.mcap").write_bytes(b"\x89MCAP0\r\n-bag-bytes")
    (private / "episodes" / "e1" / "scores.json").write_text("{}")
    (private / "instances.locked.json").write_text("[]")
    payload, kept = chunk.pack_results(private, {"instances.locked.json"}, keep_bags=True)
    import hashlib

    assert kept == [{"path": "episodes/e1/bag/bag.mcap", "worker_path": str(private / "episodes/e1/bag/bag.mcap"),
                     "sha256": hashlib.sha256(b"\x89MCAP0\r\n-bag-bytes").hexdigest(),
                     "bytes": len(b"\x89MCAP0\r\n-bag-bytes")}]
    attempt = tmp_path / "attempt"
    attempt.mkdir()
    chunk.unpack_results(payload, attempt)
    assert sorted(_files_under(attempt)) == ["episodes/e1/scores.json"]
    all_payload, kept = chunk.pack_results(private, set(), keep_bags=False)
    assert kept == []
    again = tmp_path / "again"
    again.mkdir()
    chunk.unpack_results(all_payload, again)
    assert sorted(_files_under(again)) == ["episodes/e1/bag/bag.mcap", "episodes/e1/scores.json",
                                           "instances.locked.json"]
    with pytest.raises(FileExistsError):  # a shipped result never overwrites
        chunk.unpack_results(all_payload, again)


def test_a_worker_that_stops_answering_is_given_up_at_the_chunk_timeout(fake_env, remote_cluster, monkeypatch):
    """A worker frozen mid-chunk (SIGSTOP: it cannot even stop its own launcher) is bounded by the runner."""
    from labference_ros.campaign import runner

    address, home = remote_cluster
    lock = read_lock(locked_campaign(fake_env, ITEMS))
    monkeypatch.setattr(runner, "RESULT_GRACE_S", 2.0)
    monkeypatch.setenv("FAKE_HANG_IDS", "i3")
    pid_file = fake_env / "i3.pid"
    frozen = []

    def freeze_the_worker_once_hanging():
        pid = int(_poll(lambda: pid_file.exists() and pid_file.read_text(), what="i3 mid-episode"))
        worker = psutil.Process(pid).parent()
        worker.suspend()
        frozen.append(worker)

    import threading

    freezer = threading.Thread(target=freeze_the_worker_once_hanging)
    freezer.start()
    try:
        cov = run_campaign(lock, FAKE, log=_quiet, scheduler=address, chunk_timeout_s=10)
    finally:
        freezer.join()
        for worker in frozen:
            worker.resume()  # it then sees its task cancelled and stops the launcher
    assert frozen and cov[ARM]["missing"] == ["i2", "i3"]
    info = json.loads((Path(lock["output_dir"]) / ARM / "attempt-002" / "attempt.json").read_text())
    assert info["rc"] == -1 and "no result" in info["error"] and "worker stuck or cut off" in info["error"]
    _poll(lambda: not chunk_launchers(home), what="the frozen worker's launcher to stop once it runs again")


def test_bags_left_on_the_worker_are_recorded_with_host_path_and_hash(fake_env, monkeypatch):
    import hashlib

    lock = read_lock(locked_campaign(fake_env, ITEMS))
    monkeypatch.setenv("FAKE_BAG_TEXT", "mcap-of-")
    monkeypatch.setenv(chunk.WORKER_DIR_ENV, str(fake_env / "worker-disk"))
    (fake_env / "worker-disk").mkdir()
    assert run_campaign(lock, FAKE, log=_quiet, workers=1, ship_results=True, keep_bags=True)["complete"]
    out = Path(lock["output_dir"])
    assert not list(out.rglob("*.mcap"))  # the bags stayed on the worker
    listed = [json.loads(p.read_text()) for p in sorted(out.glob(f"{ARM}/attempt-*/worker_files.json"))]
    files = [f for entry in listed for f in entry["files"]]
    assert len(listed) == 3 and all(entry["host"] for entry in listed) and len(files) == 6
    for f in files:
        bag = Path(f["worker_path"])
        assert bag.is_relative_to(fake_env / "worker-disk") and f["path"].endswith("/bag/bag.mcap")
        assert hashlib.sha256(bag.read_bytes()).hexdigest() == f["sha256"]
        assert bag.read_text().startswith("mcap-of-i")
    # Asked for without shipped results: refused before anything runs.
    with pytest.raises(ValueError, match="only with shipped results"):
        run_campaign(lock, FAKE, log=_quiet, workers=1, keep_bags=True)


def test_a_plain_tcp_scheduler_off_this_machine_is_flagged_unencrypted():
    from labference_ros.campaign.engine import unencrypted_remote

    assert unencrypted_remote("tcp://198.51.100.2:8786")
    assert unencrypted_remote("198.51.100.2:8786")
    assert unencrypted_remote("tcp://scheduler.lab:8786")
    assert not unencrypted_remote("tls://198.51.100.2:8786")
    assert not unencrypted_remote("tcp://127.0.0.1:8786")
    assert not unencrypted_remote("localhost:8786")
    assert not unencrypted_remote("tcp://[::1]:8786")
