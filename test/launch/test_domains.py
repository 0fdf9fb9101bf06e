"""Launches on one machine never share a ROS domain: each claims a free one (a
lock that dies with its processes), a domain already used by a launch or by
this graph's nodes is refused, and writers stay inside their own run directory."""
from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import pytest

from labference_ros.domain_locks import DomainError, claim_domain
from labference_ros.rosenv import loopback_environ
from launch_helpers import FAKES, LABFERENCE, STAND_INS
from rosproc import Proc

DOMAIN_LINE = re.compile(r"\[launch\] ROS domain (\d+) \((claimed a free one|from ROS_DOMAIN_ID)\)")


def fake_launch(args: list[str], domain: str | None, knobs: dict[str, str] | None = None) -> Proc:
    argv = [LABFERENCE, "launch", "weighing_sim.launch.py", *args]
    for exe, fake in STAND_INS.items():
        argv += ["--substitute", f"{exe}={FAKES / fake}"]
    env = dict(os.environ)
    env.pop("ROS_DOMAIN_ID", None)
    if domain is not None:
        env["ROS_DOMAIN_ID"] = domain
    env.update(knobs or {})
    return Proc(argv, env=env)


def other_test_domain() -> str:
    """The second domain of this test process's pair (test/conftest.py run_domain)."""
    return str(int(os.environ["ROS_DOMAIN_ID"]) + 1)


def test_two_launches_without_ros_domain_id_claim_different_domains_and_both_complete(tmp_path):
    runs = [tmp_path / "a", tmp_path / "b"]
    # The stand-in referee completes 1 s of sim after the start; its clock runs at 5x real
    # time, so a deadline close to that lost an episode to slow discovery under load.
    procs = [fake_launch(["episodes:=2", "deadline_s:=30", f"output_dir:={run}"], None,
                         {"FAKE_COMPLETE": "0,1"}) for run in runs]
    try:
        codes = [p.popen.wait(timeout=240) for p in procs]
    finally:
        for p in procs:
            p.stop()
    outs = []
    for p in procs:
        p.wait_for("\0", timeout=2)
        outs.append("\n".join(p.seen))
    assert codes == [0, 0], outs
    domains = [DOMAIN_LINE.search(out) for out in outs]
    assert all(d and d.group(2) == "claimed a free one" for d in domains), outs
    assert domains[0].group(1) != domains[1].group(1)
    for run in runs:
        rows = json.loads((run / "summary.json").read_text())["per_episode"]
        assert [(r["status"], r["reason"], r["complete"]) for r in rows] == [("ok", "completed", True)] * 2


def test_a_domain_held_by_a_running_launch_is_refused_with_a_clear_message(tmp_path):
    domain = os.environ["ROS_DOMAIN_ID"]
    first = fake_launch(["episodes:=1", "deadline_s:=100000", "free_space_check:=false",
                         f"output_dir:={tmp_path / 'a'}"], domain)
    try:
        assert first.wait_for("[launch] ROS domain", timeout=60), first.seen
        second = subprocess.run([LABFERENCE, "launch", "weighing_sim.launch.py", f"output_dir:={tmp_path / 'b'}"],
                                env={**os.environ, "ROS_DOMAIN_ID": domain}, capture_output=True, text=True,
                                timeout=120)
    finally:
        first.popen.send_signal(signal.SIGINT)
        first.stop(timeout=30)
    assert second.returncode == 1, second.stdout + second.stderr  # could not start
    assert f"ROS domain {domain} (ROS_DOMAIN_ID) is in use" in second.stderr
    assert "Unset ROS_DOMAIN_ID" in second.stderr and "Traceback" not in second.stdout + second.stderr
    assert not (tmp_path / "b").exists()  # nothing started, nothing written


def refusal_within(domain: str, seconds: float) -> str | None:
    """The message of the first claim of ``domain`` refused within ``seconds`` (claims
    that succeed are let go at once), or None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            claim_domain(domain, busy_wait_s=0.0).release()
        except DomainError as exc:
            return str(exc)
        time.sleep(0.2)
    return None


def test_a_graph_started_without_the_launcher_also_holds_its_domain(tmp_path):
    domain = other_test_domain()
    env = {**loopback_environ(), "ROS_DOMAIN_ID": domain}
    node = Proc([sys.executable, "-m", "labference_ros.nodes.balance"], env=env)
    try:
        refusal = refusal_within(domain, 60)  # the node locks as it starts
    finally:
        node.stop()
    assert refusal and f"ROS domain {domain} (ROS_DOMAIN_ID) is in use" in refusal
    claim_domain(domain, busy_wait_s=5.0).release()  # free again once the node is gone


def test_a_node_that_finds_its_domain_taken_marks_it_once_the_launch_lets_go(tmp_path):
    """A node started while a launch holds (or only tries) its domain: once that lock
    goes, the node's own mark keeps later launches off the domain it still runs on."""
    from labference_ros.domain_locks import lock_path

    domain = other_test_domain()
    launch = claim_domain(domain, busy_wait_s=5.0)
    node = Proc([sys.executable, "-m", "labference_ros.nodes.balance"], env={**loopback_environ(),
                                                                             "ROS_DOMAIN_ID": domain})
    try:
        inode = str(lock_path(int(domain)).stat().st_ino)
        deadline = time.monotonic() + 60
        waiting = False
        while not waiting and time.monotonic() < deadline:  # the node asks for its lock as it starts
            for line in pathlib.Path("/proc/locks").read_text().splitlines():
                fields = line.replace("->", "").split()  # a lock asked for and not yet had is marked "->"
                waiting = waiting or (len(fields) > 5 and fields[4] == str(node.popen.pid)
                                      and fields[5].endswith(":" + inode))
            time.sleep(0.1)
        assert waiting, "the node never asked for its domain's lock while the launch held it"
        launch.release()
        refusal = refusal_within(domain, 30)
    finally:
        launch.release()
        node.stop()
    assert refusal and f"ROS domain {domain} (ROS_DOMAIN_ID) is in use" in refusal


def test_a_claimed_domain_is_freed_when_its_holder_is_killed(tmp_path):
    domain = other_test_domain()
    code = ("import sys, time\n"
            "from labference_ros.domain_locks import claim_domain\n"
            f"claim_domain({domain!r}, busy_wait_s=0)\n"
            "print('HELD', flush=True)\n"
            "time.sleep(600)\n")
    holder = Proc([sys.executable, "-c", code], env=dict(os.environ))
    try:
        assert holder.wait_for("HELD", timeout=30)
        with pytest.raises(DomainError, match=rf"is in use \(held by pid {holder.popen.pid} "):
            claim_domain(domain, busy_wait_s=0.2)  # the refusal names the process that has it
        holder.popen.send_signal(signal.SIGKILL)
        holder.popen.wait(timeout=10)
        claim_domain(domain, busy_wait_s=0.0).release()
    finally:
        holder.stop()


def test_free_claims_differ_while_held_and_skip_the_default_domains():
    a = claim_domain(None)
    b = claim_domain(None)
    try:
        assert a.domain_id != b.domain_id and {a.domain_id, b.domain_id}.isdisjoint({0, 42})
        assert a.chosen and b.chosen and 1 <= a.domain_id <= 101
    finally:
        a.release()
        b.release()


def test_an_invalid_ros_domain_id_is_refused():
    with pytest.raises(DomainError, match="must be a whole number 0..232"):
        claim_domain("233")
    with pytest.raises(DomainError, match="must be a whole number 0..232"):
        claim_domain("-1")


def test_a_ros_domain_id_over_101_is_accepted_with_a_note_on_ephemeral_ports():
    from labference_ros.domain_locks import ephemeral_port_note

    claim = claim_domain("232")
    try:
        assert claim.domain_id == 232 and not claim.chosen
    finally:
        claim.release()
    assert "ephemeral range" in ephemeral_port_note(200) and ephemeral_port_note(101) == ""


def test_writers_refuse_an_output_dir_outside_their_run_directory(tmp_path, monkeypatch):
    from labference_ros.nodes.run_dir import RUN_DIR_ENV, outside_run_dir

    monkeypatch.setenv(RUN_DIR_ENV, str(tmp_path / "run"))
    assert outside_run_dir(str(tmp_path / "run" / "episodes" / "0000_x")) == ""
    assert "outside this launch's run directory" in outside_run_dir(str(tmp_path / "other" / "episodes" / "0000_x"))
    assert "outside" in outside_run_dir(str(tmp_path / "run" / ".." / "other"))
    monkeypatch.delenv(RUN_DIR_ENV)
    assert outside_run_dir(str(tmp_path / "anywhere")) == ""


def test_the_launcher_names_a_fresh_run_directory_per_launch(tmp_path):
    from labference_ros.launcher.launch import claim_run_dir

    first = claim_run_dir(str(tmp_path / "{timestamp}"))
    second = claim_run_dir(str(tmp_path / "{timestamp}"))
    assert first != second and first.is_dir() and second.is_dir()


def test_a_campaign_chunk_reads_the_domain_its_launcher_claimed(tmp_path):
    from labference_ros.campaign.chunk import claimed_domain

    log = tmp_path / "launcher.log"
    log.write_text("[launch] ROS domain 17 (claimed a free one); join it with ROS_DOMAIN_ID=17 ...\n"
                   "[launch] started lab_sim (pid 1)\n")
    assert claimed_domain(log) == 17
    log.write_text("error: ROS domain 5 (ROS_DOMAIN_ID) is in use\n")
    assert claimed_domain(log) is None
    assert claimed_domain(tmp_path / "missing.log") is None
