"""A campaign across hosts: a scheduler, a runner and two workers, each in a network
namespace of its own joined by virtual Ethernet to one bridge (addresses in the
test's namespaces only), each worker with a private directory of its own for
its output. Coverage complete, the scores of a one-worker run, no secret on the
wire (captured on the bridge), and a worker killed mid-run recovered by a second
`campaign run`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest
import yaml

from labference_ros.campaign import chunk
from labference_ros.campaign.lock import build_lock, read_lock, write_lock
from labference_ros.campaign.runner import coverage, final_scores, run_campaign
from certified import certified_list
from test_campaign import FAKE, GIT, campaign_domain  # noqa: F401 (campaign_domain: autouse fixture)
from test_campaign_workers import _launched, _poll, _quiet, _set_aside, needs_netns

BIN = Path(sys.executable).parent
SUBNET = "198.51.100"  # TEST-NET-2, never routed
HOSTS = {"sched": 1, "runner": 2, "w1": 11, "w2": 12}
PORT = 8786
SECRET_NAME = "LAB_POLICY_API_KEY"
SECRET_VALUE = "s3cr3t-5b0d71c4-only-on-the-workers"
ARMS = {"00-a": [f"a{k}" for k in range(3)], "01-b": [f"b{k}" for k in range(3)]}


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def lab(tmp_path):
    """Namespaces per host, each with eth0 on a bridge in a LAN namespace; name -> namespace."""
    tag = uuid.uuid4().hex[:6]
    lan = f"lflan_{tag}"
    names = {host: f"lf{host}_{tag}" for host in HOSTS}
    created = []
    try:
        for ns in (lan, *names.values()):
            _ip("netns", "add", ns)
            created.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", lan, "link", "add", "br0", "type", "bridge")
        _ip("-n", lan, "link", "set", "br0", "up")
        for host, ns in names.items():
            _ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", f"v{host}", "netns", lan)
            _ip("-n", ns, "addr", "add", f"{SUBNET}.{HOSTS[host]}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", lan, "link", "set", f"v{host}", "master", "br0")
            _ip("-n", lan, "link", "set", f"v{host}", "up")
        yield lan, names
    finally:
        for ns in created:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _in(ns: str, *cmd: str, **kw) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, *cmd], **kw)


def _two_arm_lock(tmp: Path) -> Path:
    code = tmp / "code"
    (code / "pkg").mkdir(parents=True)
    (code / "pkg" / "scorer.py").write_text("THRESHOLD = 1.0\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run([*GIT, *args], cwd=code, check=True)
    arms = []
    for arm_id, ids in ARMS.items():
        (tmp / f"{arm_id}.json").write_text(json.dumps(
            certified_list([{"instance_id": i, "condition": "basic"} for i in ids])))
        arms.append({"id": arm_id, "system": "scripted_expert", "condition": "basic", "instances": f"{arm_id}.json"})
    spec = {"name": "hosts", "output_dir": "runs", "chunk_size": 1, "code_root": "code", "code_paths": ["pkg"],
            "dependencies": ["numpy"], "arms": arms}
    (tmp / "spec.yaml").write_text(yaml.safe_dump(spec))
    return write_lock(build_lock(tmp / "spec.yaml"), tmp / "spec.lock.json")


@needs_netns
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_campaign_across_hosts_ships_results_keeps_secrets_home_and_recovers_a_lost_worker(lab, tmp_path,
                                                                                            monkeypatch):
    lan, ns = lab
    lock_path = _two_arm_lock(tmp_path)
    lock = read_lock(lock_path)
    launched = tmp_path / "launched.txt"
    monkeypatch.setenv("FAKE_LAUNCH_LOG", str(launched))
    monkeypatch.setenv("FAKE_PID_DIR", str(tmp_path))
    monkeypatch.setenv("FAKE_WRONG_ARMS", "01-b")  # the arms score differently
    monkeypatch.setenv("FAKE_EPISODE_S", "0.3")
    # Payloads as they are, so the capture below can see what a task carries.
    monkeypatch.setenv("DASK_DISTRIBUTED__COMM__COMPRESSION", "False")
    assert run_campaign(lock, FAKE, log=_quiet, workers=1)["complete"]
    one = _set_aside(lock, "runs-one-worker")
    launched.unlink()

    base = {k: v for k, v in os.environ.items() if k != SECRET_NAME}
    address = f"tcp://{SUBNET}.{HOSTS['sched']}:{PORT}"
    procs = []
    pcap = tmp_path / "lan.pcap"
    tcpdump = _in(lan, "tcpdump", "-i", "br0", "-n", "-U", "-s", "0", "-w", str(pcap), "tcp",
                  stderr=subprocess.DEVNULL)
    try:
        _poll(pcap.exists, what="the capture to start")
        procs.append(_in(ns["sched"], str(BIN / "dask"), "scheduler", "--host", f"{SUBNET}.{HOSTS['sched']}",
                         "--port", str(PORT), "--no-dashboard",
                         env={**base, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"},
                         stderr=subprocess.DEVNULL))
        workers = {}
        for host in ("w1", "w2"):
            home = tmp_path / f"{host}-home"  # this host's private disk
            home.mkdir()
            (home / "secrets.env").write_text(f"{SECRET_NAME}={SECRET_VALUE}\n")
            workers[host] = _in(ns[host], str(BIN / "dask"), "worker", address, "--nthreads", "1", "--no-nanny",
                                "--host", f"{SUBNET}.{HOSTS[host]}", "--no-dashboard", "--local-directory",
                                str(home), env={**base, chunk.SECRETS_FILE_ENV: str(home / "secrets.env")},
                                cwd=home, stderr=subprocess.DEVNULL)
        procs += workers.values()
        wait = ("from distributed import Client; import sys; "
                f"c = Client({address!r}, timeout=60); c.wait_for_workers(2, timeout=120); c.close()")
        subprocess.run(["ip", "netns", "exec", ns["runner"], sys.executable, "-c", wait], check=True, timeout=300)

        def campaign(*extra_env):
            env = {**os.environ, SECRET_NAME: SECRET_VALUE, **dict(extra_env)}  # the runner has the secret too
            return _in(ns["runner"], str(BIN / "labference"), "campaign", "run", str(lock_path), "--scheduler",
                       address, "--secret", SECRET_NAME, "--launcher", " ".join(FAKE), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

        # b1 hangs mid-episode; the worker running it is killed, process and all.
        first = campaign(("FAKE_HANG_IDS", "b1"))
        pid = int(_poll(lambda: (tmp_path / "b1.pid").exists() and (tmp_path / "b1.pid").read_text(),
                        timeout=300, what="b1 mid-episode"))
        lost = next(h for h, p in workers.items() if p.pid in {a.pid for a in psutil.Process(pid).parents()})
        psutil.Process(pid).parent().kill()
        out, _ = first.communicate(timeout=300)
        assert first.returncode == 3, out  # incomplete
        cov = coverage(lock)
        assert cov["00-a"]["missing"] == [] and cov["01-b"]["missing"] == ["b1"], out
        assert not list((Path(lock["output_dir"]) / "01-b").glob("*/episodes/*-b1"))  # nothing half-merged
        _poll(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE,
              what="the lost worker's launcher to stop")

        second = campaign()
        out, _ = second.communicate(timeout=300)
        assert second.returncode == 0, out
        cov = coverage(lock)
        assert cov["complete"] and not any(cov[a]["duplicated"] for a in ARMS)
        assert final_scores(lock) == one
        assert sorted(_launched(launched)) == sorted([*ARMS["00-a"], *ARMS["01-b"], "b1"])

        # Every attempt ran on a worker host, in that host's private directory, never the campaign's.
        hosts = {json.loads(p.read_text()).get("worker") for p in Path(lock["output_dir"]).glob("*/attempt-*/attempt.json")}
        assert any(f"{SUBNET}.{HOSTS[lost]}" in str(w) for w in hosts)
        assert all(not list((tmp_path / f"{h}-home").rglob("labference-chunk-*")) for h in workers if h != lost)
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(30)
        tcpdump.terminate()
        tcpdump.wait(30)

    records = [p.read_bytes() for p in Path(lock["output_dir"]).rglob("*") if p.is_file()]
    assert records and not any(SECRET_VALUE.encode() in data for data in records)
    wire = pcap.read_bytes()
    assert SECRET_NAME.encode() in wire  # the capture sees what tasks carry: the secret's name ...
    assert SECRET_VALUE.encode() not in wire  # ... never its value
