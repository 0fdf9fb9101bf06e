"""Campaign scale-out on Dask distributed: same results on any number of workers,
one ROS domain per running chunk, nothing off loopback, kill + resume with workers."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from labference_ros.campaign import chunk, engine, runner
from labference_ros.campaign.engine import local_cluster
from labference_ros.campaign.lock import read_lock
from labference_ros.campaign.plan import SlotPool, domain_ids, next_attempt_name, pending_chunks
from labference_ros.campaign.runner import comparable_scores, coverage, final_scores, ledger_records, run_campaign
from labference_ros.cli.main import main
from labference_ros.reporting.accounting import accounting
from labference_ros.reporting.episodes import load
from test_campaign import FAKE, campaign_domain, locked_campaign  # noqa: F401 (campaign_domain: autouse fixture)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ros"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
from netns import capture as _capture, ip as _ip, needs_netns  # noqa: E402
from test_dds_loopback import sealed_netns  # noqa: E402,F401 (fixture)

LABFERENCE = str(Path(sys.executable).with_name("labference"))
ITEMS = [{"instance_id": f"i{k}", "condition": "basic"} for k in range(6)]
ARM = "00-fake-basic"
# What a local cluster's nannies put into their workers' environment (and this process's).
NANNY_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_", "PYTHONHASHSEED")


def _quiet(*_):
    pass


def _poll(condition, timeout=120.0, what="condition"):
    """Wait for `condition()` to be truthy; generous timeouts, no timing asserts."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _launched(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def _env_events(log: Path) -> list[dict]:
    """The fake launcher's start / end lines: event, attempt, its whole environment."""
    return [json.loads(line) for line in log.read_text().splitlines()]


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(text in part for part in proc.info["cmdline"] or ()) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


def _kill_leftovers(text: str) -> None:
    for pid in _processes_mentioning(text):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _set_aside(lock: dict, name: str) -> dict:
    """Move a finished run of the lock out of the way (the lock pins its output_dir); its scores."""
    scores = final_scores(lock)
    shutil.move(lock["output_dir"], Path(lock["output_dir"]).with_name(name))
    return scores


@pytest.fixture
def fake_env(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_LAUNCH_LOG", str(tmp_path / "launched.txt"))
    monkeypatch.setenv("FAKE_ENV_LOG", str(tmp_path / "env.txt"))
    monkeypatch.setenv("FAKE_PID_DIR", str(tmp_path))
    return tmp_path


# -- pure planning -------------------------------------------------------------------
def test_chunks_follow_the_locked_order_whatever_is_finished():
    lock = {"chunk_size": 2, "arms": [{"arm_id": "a", "instances": ITEMS[:5]}, {"arm_id": "b", "instances": ITEMS[:1]}]}
    chunks = pending_chunks(lock, {"a": ["i1"], "b": []})
    assert [(c.arm["arm_id"], c.instance_ids) for c in chunks] == [
        ("a", ["i0", "i2"]), ("a", ["i3", "i4"]), ("b", ["i0"])]
    assert pending_chunks(lock, {"a": [i["instance_id"] for i in ITEMS], "b": ["i0"]}) == []


def test_attempt_names_never_reuse_a_number():
    assert next_attempt_name([]) == "attempt-001"
    assert next_attempt_name(["attempt-001", "attempt-003", "launcher.log", "attempt-x"]) == "attempt-004"


def test_running_chunks_never_share_a_ros_domain():
    pool = SlotPool(domain_ids(40, 3))
    held = [pool.take() for _ in range(3)]
    assert held == [40, 41, 42] and not pool
    pool.give_back(41)
    assert pool.take() == 41
    pool.give_back(40)
    with pytest.raises(ValueError, match="twice"):
        pool.give_back(40)
    with pytest.raises(ValueError, match="exceed"):
        domain_ids(230, 4)
    with pytest.raises(ValueError):
        domain_ids(0, 0)


def test_domains_stay_within_what_ros_accepts_on_linux():
    assert domain_ids(100, 2) == [100, 101]
    assert domain_ids(230, 3) == [230, 231, 232]
    with pytest.raises(ValueError, match="exceed 0..232"):
        domain_ids(231, 3)
    with pytest.raises(ValueError, match="exceed"):
        domain_ids(-1, 1)


def test_a_domain_whose_launcher_may_live_is_held_back():
    now = [0.0]
    pool = SlotPool([40, 41], clock=lambda: now[0])
    a, b = pool.take(), pool.take()
    pool.give_back(a, hold_s=60)
    assert not pool and pool.seconds_to_release() == 60
    with pytest.raises(ValueError, match="twice"):
        pool.give_back(a)
    pool.give_back(b)
    assert pool.take() == b and not pool
    now[0] = 59.9
    assert not pool
    now[0] = 60.0
    assert pool and pool.seconds_to_release() is None and pool.take() == a


def test_comparable_scores_leave_out_only_the_attempt_name():
    scores = {"episode_id": "0001_i3", "status": "final", "t": 15.1, "native": {"correct": 1}}
    assert comparable_scores(scores) == {"status": "final", "t": 15.1, "native": {"correct": 1}}


# -- one chunk -----------------------------------------------------------------------
def test_the_launcher_gets_the_jobs_environment_and_nothing_else(tmp_path):
    attempt = tmp_path / "attempt"
    attempt.mkdir()
    env = {"ROS_DOMAIN_ID": "7", "ONLY_THIS": "1"}
    result = chunk.run_chunk(chunk.ChunkJob(command=["/usr/bin/env"], attempt_dir=str(attempt), ros_domain_id=7,
                                            env=env))
    assert result["rc"] == 0
    assert sorted((attempt / "launcher.log").read_text().splitlines()) == ["ONLY_THIS=1", "ROS_DOMAIN_ID=7"]


def test_a_launcher_that_would_not_die_with_its_worker_is_not_started(tmp_path, monkeypatch):
    monkeypatch.setattr(chunk, "_PRCTL", lambda *args: -1)  # prctl(PR_SET_PDEATHSIG) fails
    attempt, ran = tmp_path / "attempt", tmp_path / "ran"
    attempt.mkdir()
    job = chunk.ChunkJob(command=[sys.executable, "-c", f"open({str(ran)!r}, 'w')"], attempt_dir=str(attempt),
                         ros_domain_id=7, env=dict(os.environ))
    assert chunk.run_chunk(job)["rc"] != 0
    assert not ran.exists() and "PR_SET_PDEATHSIG" in (attempt / "launcher.log").read_text()


def test_a_chunk_that_raises_is_a_failed_attempt_and_its_domain_rests(fake_env, monkeypatch):
    """In process as on a worker: the campaign goes on; the launcher's domain waits out its hold."""
    lock = read_lock(locked_campaign(fake_env, ITEMS))
    monkeypatch.setattr(runner, "DOMAIN_HOLD_S", 0.5)
    real, calls = engine.run_chunk, []

    def lost_first(job):
        calls.append((time.monotonic(), job.ros_domain_id))
        if len(calls) == 1:
            raise RuntimeError("lost")
        return real(job)

    monkeypatch.setattr(engine, "run_chunk", lost_first)
    logged = []
    cov = run_campaign(lock, FAKE, log=logged.append, workers=1)
    assert cov[ARM]["missing"] == ["i0", "i1"] and cov[ARM]["finished"] == 4
    info = json.loads((Path(lock["output_dir"]) / ARM / "attempt-001" / "attempt.json").read_text())
    assert info["rc"] == -1 and "RuntimeError('lost')" in info["error"] and info["missing"] == ["i0", "i1"]
    assert len(calls) == 3 and calls[1][1] == calls[0][1]  # the only domain, once its hold was over
    assert calls[1][0] - calls[0][0] >= 0.5
    assert any("may still be stopping" in line for line in logged)


def test_run_refuses_an_empty_ros_domain_id_cleanly(fake_env, monkeypatch):
    lock_path = locked_campaign(fake_env, ITEMS)
    monkeypatch.setenv("ROS_DOMAIN_ID", "")
    res = CliRunner().invoke(main, ["campaign", "run", str(lock_path), "--launcher", " ".join(FAKE)])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.output
    assert "ROS_DOMAIN_ID must be a whole number" in res.output
    assert not Path(read_lock(lock_path)["output_dir"]).exists() and _launched(fake_env / "launched.txt") == []


def test_run_refuses_a_scheduler_without_workers_cleanly(fake_env):
    from distributed import LocalCluster

    lock_path = locked_campaign(fake_env, ITEMS)
    with LocalCluster(n_workers=0, processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=None,
                      scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as cluster:
        res = CliRunner().invoke(main, ["campaign", "run", str(lock_path), "--scheduler", cluster.scheduler_address,
                                        "--launcher", " ".join(FAKE)])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.output
    assert f"cannot run the campaign: scheduler {cluster.scheduler_address} has no workers" in res.output


# -- the local cluster ---------------------------------------------------------------
def test_local_cluster_listens_only_on_loopback():
    """Scheduler, its HTTP endpoint, nannies and workers: every listening socket is 127.0.0.1."""
    with local_cluster(2) as client:
        client.wait_for_workers(2, timeout=120)
        me = psutil.Process()
        procs = [me, *me.children(recursive=True)]
        listening = [(p.pid, c.laddr) for p in procs for c in p.net_connections("inet")
                     if c.status == psutil.CONN_LISTEN or not c.raddr]
        workers = client.scheduler_info()["workers"]
        assert len(workers) == 2 and all(w["nanny"].startswith("tcp://127.0.0.1:") for w in workers.values())
    assert len({pid for pid, _ in listening}) >= 3  # this process (scheduler, nannies) and two workers
    assert all(addr.ip == "127.0.0.1" for _, addr in listening), listening


def test_two_workers_give_the_scores_of_one_with_a_domain_per_running_chunk(fake_env, monkeypatch):
    lock = read_lock(locked_campaign(fake_env, ITEMS))
    monkeypatch.setenv("FAKE_WRONG_IDS", "i4")  # results that differ per instance
    for name in NANNY_ENV:  # absent here (restored afterwards), so a launcher that sees them ran in a worker's env
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    assert run_campaign(lock, FAKE, log=_quiet, workers=1)["complete"]
    one = _set_aside(lock, "runs-one-worker")
    one_envs = [e["env"] for e in _env_events(fake_env / "env.txt")]
    (fake_env / "launched.txt").unlink()
    (fake_env / "env.txt").unlink()

    # The first two chunks wait for each other: they overlap, on both workers, whatever the load.
    monkeypatch.setenv("FAKE_BARRIER_DIR", str(fake_env / "barrier"))
    cov = run_campaign(lock, FAKE, log=_quiet, workers=2)
    assert cov["complete"] and cov[ARM]["attempts"] == 3
    assert final_scores(lock) == one and set(one[ARM]) == {f"i{k}" for k in range(6)}
    assert sorted(_launched(fake_env / "launched.txt")) == [f"i{k}" for k in range(6)]  # each once

    out = Path(lock["output_dir"])
    records = ledger_records(out)
    starts = {r["attempt"]: r for r in records if r["record"] == "attempt_start"}
    ends = {r["attempt"]: r for r in records if r["record"] == "attempt_end"}
    assert sorted(Path(a).name for a in starts) == ["attempt-001", "attempt-002", "attempt-003"]
    assert set(starts) == set(ends) and all(r["rc"] == 0 for r in ends.values())
    infos = [json.loads((Path(a) / "attempt.json").read_text()) for a in starts]
    assert len({i["worker"] for i in infos}) == 2  # both workers ran chunks

    # What each launcher saw: its attempt's domain, localhost discovery; overlapping ones differ.
    events = _env_events(fake_env / "env.txt")

    # and otherwise the environment of a one-worker run, whatever the worker's own environment is.
    def apart_from_domain(env):
        return {k: v for k, v in env.items() if k not in ("ROS_DOMAIN_ID", "FAKE_BARRIER_DIR")}
    assert len(one_envs) == 6 and not any(name in one_envs[0] for name in NANNY_ENV)
    assert all(apart_from_domain(e["env"]) == apart_from_domain(one_envs[0]) for e in events)
    assert all(apart_from_domain(env) == apart_from_domain(one_envs[0]) for env in one_envs)

    running, overlaps = {}, 0
    for event, attempt, domain, discovery in ((e["event"], e["attempt"], e["env"]["ROS_DOMAIN_ID"],
                                               e["env"]["ROS_AUTOMATIC_DISCOVERY_RANGE"]) for e in events):
        assert discovery == "LOCALHOST"
        assert int(domain) == starts[attempt]["ros_domain_id"]
        if event == "start":
            assert domain not in running.values(), (attempt, domain, running)
            overlaps += bool(running)
            running[attempt] = domain
        else:
            running.pop(attempt)
    assert overlaps >= 1  # the check above was exercised


def test_killed_runner_with_workers_takes_its_launchers_along_and_resumes(fake_env, monkeypatch):
    lock_path = locked_campaign(fake_env, ITEMS)
    lock = read_lock(lock_path)
    assert run_campaign(lock, FAKE, log=_quiet, workers=1)["complete"]
    uninterrupted = _set_aside(lock, "runs-uninterrupted")
    (fake_env / "launched.txt").unlink()

    # Chunks [i0,i1] [i2,i3] [i4,i5] on two workers; i3 and i5 stay mid-episode.
    env = {**os.environ, "FAKE_HANG_IDS": "i3,i5"}
    runner = subprocess.Popen([LABFERENCE, "campaign", "run", str(lock_path), "--workers", "2",
                               "--launcher", " ".join(FAKE)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        def hanging_pids():
            files = [fake_env / f"{i}.pid" for i in ("i3", "i5")]
            if all(f.exists() for f in files) and coverage(lock)[ARM]["finished"] == 4:
                return [int(f.read_text()) for f in files]
            return None

        pids = _poll(hanging_pids, what="i3 and i5 mid-episode, the other four finished")
        assert all(_alive(p) for p in pids)
        runner.send_signal(signal.SIGKILL)
        runner.wait(60)
    finally:
        if runner.poll() is None:
            runner.kill()
    # Nothing of the killed run goes on writing into the campaign directory.
    try:
        _poll(lambda: not any(_alive(p) for p in pids), what="the killed runner's launchers to die")
        _poll(lambda: not _processes_mentioning(lock["output_dir"]), what="no process working in the campaign dir")
    finally:
        _kill_leftovers(lock["output_dir"])  # a failing run must not leave orphans behind either

    cov = run_campaign(lock, FAKE, log=_quiet, workers=2)
    assert sorted(_launched(fake_env / "launched.txt")[6:]) == ["i3", "i5"]  # finished ones not redone
    assert cov["complete"] and not cov[ARM]["duplicated"]
    assert final_scores(lock) == uninterrupted

    # The killed attempts stay in the records: ERROR rows, ledger closed as interrupted.
    a = accounting(load([Path(lock["output_dir"])]))
    assert (a["attempts"], a["PASS"], a["ERROR"]) == (8, 6, 2)
    records = ledger_records(Path(lock["output_dir"]))
    interrupted = [r["attempt"] for r in records if r["record"] == "attempt_interrupted"]
    assert len(interrupted) == 2
    for attempt in interrupted:
        assert json.loads((Path(attempt) / "attempt.json").read_text())["status"] == "interrupted"


def _dask_cluster(tmp: Path, env: dict) -> tuple[list[subprocess.Popen], str]:
    """An 'existing' scheduler with two single-threaded workers, in processes of their own."""
    dask = str(Path(sys.executable).with_name("dask"))
    sched_file = tmp / "scheduler.json"
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(sched_file)], env=env, stderr=subprocess.DEVNULL)]
    _poll(sched_file.exists, what="the scheduler file")
    procs.append(subprocess.Popen([dask, "worker", "--scheduler-file", str(sched_file), "--nworkers", "2",
                                   "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
                                  env=env, stderr=subprocess.DEVNULL))
    return procs, json.loads(sched_file.read_text())["address"]


def test_existing_scheduler_cancels_the_chunks_of_a_killed_runner(fake_env):
    lock_path = locked_campaign(fake_env, ITEMS)
    lock = read_lock(lock_path)
    procs, address = _dask_cluster(fake_env, dict(os.environ))
    try:
        from distributed import Client

        with Client(address) as client:
            client.wait_for_workers(2, timeout=120)
        hanging = ["env", "FAKE_HANG_IDS=i3", *FAKE]  # the launcher is not locked: resume without the hang
        # Workers writing into the shared campaign directory (shipped results: test_campaign_remote.py).
        runner = subprocess.Popen([LABFERENCE, "campaign", "run", str(lock_path), "--scheduler", address,
                                   "--shared-dir", "--launcher", " ".join(hanging)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        pid_file = fake_env / "i3.pid"
        _poll(lambda: pid_file.exists() and coverage(lock)[ARM]["finished"] == 5, what="i3 mid-episode, rest done")
        pid = int(pid_file.read_text())
        runner.kill()
        runner.wait(60)
        try:
            _poll(lambda: not _alive(pid), what="the scheduler to cancel the killed runner's chunk")
        finally:
            _kill_leftovers(lock["output_dir"])
        assert all(p.poll() is None for p in procs)  # the workers themselves live on

        cov = run_campaign(lock, FAKE, log=_quiet, scheduler=address, ship_results=False)
        assert _launched(fake_env / "launched.txt")[6:] == ["i3"]
        assert cov["complete"] and not cov[ARM]["duplicated"]
        engines = [r["engine"] for r in ledger_records(Path(lock["output_dir"])) if r["record"] == "campaign_run"]
        assert engines[-1] == f"scheduler {address}, 2 slot(s)"
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            p.wait(60)


# -- loopback ------------------------------------------------------------------------
def _campaign_in(ns: str, lock_path: Path, *args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", ns, LABFERENCE, "campaign", "run", str(lock_path),
                           "--launcher", " ".join(FAKE), *args], env=env, capture_output=True, text=True, timeout=300)


@needs_netns
def test_two_worker_campaign_sends_nothing_off_loopback(sealed_netns, fake_env):
    lock_path = locked_campaign(fake_env, ITEMS)
    env = {**os.environ, "FAKE_EPISODE_S": "0.2"}
    done = {}

    def campaign():
        done["run"] = _campaign_in(sealed_netns, lock_path, "--workers", "2", env=env)

    # ARP too: a unicast connection to anywhere off this namespace would first ask for an address.
    packets = _capture(sealed_netns, fake_env, campaign, bpf="udp or tcp or arp")
    run = done["run"]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "local Dask cluster of 2 workers on 127.0.0.1" in run.stdout
    assert coverage(read_lock(lock_path))["complete"]
    assert packets == []


@needs_netns
def test_capture_sees_a_campaign_whose_scheduler_is_off_loopback(sealed_netns, fake_env):
    """Control: the same command pointed at a scheduler on the namespace's 'LAN' is captured."""
    lock_path = locked_campaign(fake_env, ITEMS)
    # A fixed neighbour entry, so the connection attempt leaves lan0 rather than waiting on ARP.
    _ip("-n", sealed_netns, "neigh", "add", "192.0.2.99", "lladdr", "02:00:00:00:00:99", "dev", "lan0",
        "nud", "permanent")
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s"}
    done = {}

    def campaign():
        done["run"] = _campaign_in(sealed_netns, lock_path, "--scheduler", "tcp://192.0.2.99:8786", env=env)

    packets = _capture(sealed_netns, fake_env, campaign)
    assert done["run"].returncode != 0 and "cannot run the campaign" in done["run"].stderr
    assert any("192.0.2.99.8786" in p for p in packets), packets


# -- the real launcher ---------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_real_episodes_score_as_one_launch_does_on_two_workers(tmp_path, monkeypatch):
    """The golden launch's two scripted_expert episodes (one launch, seed 0, captured
    before the task-module reorganisation) as two chunks on two workers at once."""
    from goldens import golden_scores, without_volatile

    from labference_ros.tasks.weighing.instances import generate

    monkeypatch.delenv("LABFERENCE_LAUNCHER", raising=False)
    items = [json.loads(i.to_json()) for i in generate("basic", 2, task_seed=0, layout_seed=0, policy_seed=0)]
    arm = {"id": "00-scripted_expert-basic", "system": "scripted_expert",
           "args": {"record": "false", "service_timeout_s": 120}}
    lock = read_lock(locked_campaign(tmp_path, items, chunk_size=1, arm=arm))
    arm_id = "00-scripted_expert-basic"

    def by_instance(scores: dict) -> dict:
        # Episode ids are NNNN_<instance id>, NNNN the place in its launch; ids derived
        # from them (observations, events) differ only by that place.
        text = re.sub(r"\b\d{4}_(basic-\d+-\d{4})", r"\1", json.dumps(scores))
        return without_volatile(json.loads(text))

    cov = run_campaign(lock, log=_quiet, workers=2)
    assert cov["complete"], cov
    two = {iid: by_instance(s) for iid, s in final_scores(lock)[arm_id].items()}
    one = {episode.split("_", 1)[1]: by_instance(comparable_scores(s))
           for episode, s in golden_scores("expert_basic").items()}
    assert set(two) == {i["instance_id"] for i in items} == set(one)
    assert all(s["status"] == "final" and s["valid_complete"] is True for s in two.values())
    # Every field the referee computed, sim times included (the episode id names the attempt).
    assert two == one
    domains = {json.loads(p.read_text())["ros_domain_id"] for p in Path(lock["output_dir"]).glob("*/attempt-*/attempt.json")}
    assert len(domains) == 2
