"""Campaign lock, tamper refusal, kill + resume through a fake launcher."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from labference_ros.campaign.lock import LockMismatch, build_lock, read_lock, verify, write_lock
from labference_ros.campaign.runner import coverage, run_campaign
from labference_ros.reporting.accounting import accounting
from labference_ros.reporting.episodes import load, resolve
from certified import certified_list

HERE = Path(__file__).resolve().parent
FAKE = [sys.executable, str(HERE / "fake_launcher.py")]
GIT = ["git", "-c", "user.email=t@example.org", "-c", "user.name=t"]
# The pair of ROS domains test/conftest.py gives this test run (or this pytest-xdist
# worker) alone: a two-worker campaign uses the first and the next. A domain picked any
# other way can be another worker's, whose graph then holds it and the launch refuses.
CAMPAIGN_DOMAIN = os.environ["ROS_DOMAIN_ID"]


@pytest.fixture(autouse=True)
def campaign_domain(monkeypatch):
    monkeypatch.setenv("ROS_DOMAIN_ID", CAMPAIGN_DOMAIN)


def locked_campaign(tmp_path, items, chunk_size=2, arm=None) -> Path:
    """A spec over `items` with a code tree of its own (so edits elsewhere never break the lock); its lock."""
    code = tmp_path / "code"
    (code / "pkg").mkdir(parents=True)
    (code / "pkg" / "scorer.py").write_text("THRESHOLD = 1.0\n")
    subprocess.run([*GIT, "init", "-q"], cwd=code, check=True)
    subprocess.run([*GIT, "add", "."], cwd=code, check=True)
    subprocess.run([*GIT, "commit", "-qm", "init"], cwd=code, check=True)
    (tmp_path / "list.json").write_text(json.dumps(certified_list(items)))
    spec = {"name": "t", "output_dir": "runs", "chunk_size": chunk_size, "code_root": "code", "code_paths": ["pkg"],
            "dependencies": ["numpy"],
            "arms": [{"id": "00-fake-basic", "system": "scripted_expert", "condition": "basic",
                      "instances": "list.json", **(arm or {})}]}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    return write_lock(build_lock(tmp_path / "spec.yaml"), tmp_path / "spec.lock.json")


@pytest.fixture
def campaign(tmp_path, monkeypatch):
    items = [{"instance_id": f"i{k}", "condition": "basic"} for k in range(6)]
    lock_path = locked_campaign(tmp_path, items)
    log = tmp_path / "launched.txt"
    monkeypatch.setenv("FAKE_LAUNCH_LOG", str(log))
    return tmp_path, lock_path, log


def _launched(log):
    return log.read_text().split() if log.exists() else []


def test_lock_is_immutable_and_records_what_it_hashes(campaign):
    tmp, lock_path, _ = campaign
    lock = read_lock(lock_path)
    assert lock["code"]["head_tree"] and lock["code"]["dirty"] is False
    assert lock["dependencies"]["numpy"] and lock["seeds"]["bootstrap"] == 240926
    assert [i["instance_id"] for i in lock["arms"][0]["instances"]] == [f"i{k}" for k in range(6)]
    assert verify(lock) == {}
    with pytest.raises(FileExistsError):
        write_lock(lock, lock_path)


@pytest.mark.parametrize("tamper,field", [
    ("list", "instance_list:"), ("code", "code.content_sha256"), ("spec", "spec"), ("lock", "lock_sha256")])
def test_run_refuses_a_tampered_input_naming_it(campaign, tamper, field):
    tmp, lock_path, log = campaign
    lock = read_lock(lock_path)
    if tamper == "list":
        data = json.loads((tmp / "list.json").read_text())
        data["instances"][0]["target_g"] = 999
        (tmp / "list.json").write_text(json.dumps(data))
    elif tamper == "code":
        (tmp / "code" / "pkg" / "scorer.py").write_text("THRESHOLD = 2.0\n")
    elif tamper == "spec":
        (tmp / "spec.yaml").write_text((tmp / "spec.yaml").read_text() + "# edited\n")
    else:
        lock["chunk_size"] = 1
    with pytest.raises(LockMismatch) as err:
        run_campaign(lock, FAKE, log=lambda *_: None)
    assert any(k.startswith(field) for k in err.value.differences), err.value.differences
    assert field.rstrip(":") in str(err.value)
    if tamper == "code":
        assert "code.dirty" in err.value.differences
    assert _launched(log) == []  # nothing ran


def test_killed_campaign_resumes_without_redoing_or_losing_episodes(campaign, monkeypatch):
    tmp, lock_path, log = campaign
    env = {**os.environ, "FAKE_KILL_AT": "i3"}
    code = ("import sys; from labference_ros.campaign.lock import read_lock; "
            "from labference_ros.campaign.runner import run_campaign; "
            f"run_campaign(read_lock(sys.argv[1]), {FAKE!r}, log=lambda *_: None)")
    killed = subprocess.run([sys.executable, "-c", code, str(lock_path)], env=env)
    assert killed.returncode == -9
    assert _launched(log) == ["i0", "i1", "i2", "i3"]
    lock = read_lock(lock_path)
    assert coverage(lock)["00-fake-basic"]["finished"] == 3

    monkeypatch.setenv("FAKE_ERROR_IDS", "i4")
    monkeypatch.setenv("FAKE_WRONG_IDS", "i5")
    cov = run_campaign(lock, FAKE, log=lambda *_: None)
    assert _launched(log)[4:] == ["i3", "i4", "i5"]  # finished ones are not redone
    arm = cov["00-fake-basic"]
    assert arm["missing"] == ["i4"] and not arm["duplicated"] and not cov["complete"]

    monkeypatch.delenv("FAKE_ERROR_IDS")
    cov = run_campaign(lock, FAKE, log=lambda *_: None)
    assert _launched(log)[7:] == ["i4"]
    assert cov["complete"] and cov["00-fake-basic"]["finished"] == 6

    attempts = load([tmp / "runs"])
    # Every attempt stays: the killed i3 and the errored i4 are ERROR rows.
    a = accounting(attempts)
    assert (a["attempts"], a["PASS"], a["FAIL"], a["ERROR"]) == (8, 5, 1, 2)
    assert a["time_per_success_s"] is None  # the killed attempt's wall time is unknown
    results, cov2 = resolve(attempts)
    assert len(results) == 6 and cov2["retried"] == ["i3", "i4"] and not cov2["duplicated"]


def test_launcher_crash_counts_missing_episodes_as_error_attempts(campaign, monkeypatch):
    tmp, lock_path, log = campaign
    crash = [sys.executable, "-c", "import sys; sys.exit(2)"]
    cov = run_campaign(read_lock(lock_path), crash, log=lambda *_: None)
    assert cov["00-fake-basic"]["missing"] == [f"i{k}" for k in range(6)]
    a = accounting(load([tmp / "runs"]))
    assert a["attempts"] == 6 and a["ERROR"] == 6 and a["success_rate"] == 0.0


@pytest.mark.parametrize("args,word", [({"observation": "full"}, "not arguments"), ({"seed": 3}, "set by the campaign")])
def test_lock_refuses_arm_args_the_launcher_or_campaign_owns(tmp_path, args, word):
    (tmp_path / "list.json").write_text(json.dumps(certified_list([{"instance_id": "i0"}])))
    spec = {"arms": [{"system": "scripted_expert", "condition": "basic", "instances": "list.json", "args": args}]}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    with pytest.raises(ValueError, match=word):
        build_lock(tmp_path / "spec.yaml")


def test_interrupted_attempt_counts_its_never_started_instances(campaign):
    """Killed right after i2's run.json: i3 of the same chunk never got a directory, yet stays an ERROR row."""
    tmp, lock_path, log = campaign
    code = ("import sys; from labference_ros.campaign.lock import read_lock; "
            "from labference_ros.campaign.runner import run_campaign; "
            f"run_campaign(read_lock(sys.argv[1]), {FAKE!r}, log=lambda *_: None)")
    killed = subprocess.run([sys.executable, "-c", code, str(lock_path)], env={**os.environ, "FAKE_KILL_AT": "i2"})
    assert killed.returncode == -9 and _launched(log) == ["i0", "i1", "i2"]
    lock = read_lock(lock_path)
    assert run_campaign(lock, FAKE, log=lambda *_: None)["complete"]
    killed_attempt = tmp / "runs" / "00-fake-basic" / "attempt-002"
    info = json.loads((killed_attempt / "attempt.json").read_text())
    assert info["status"] == "interrupted" and info["missing"] == ["i3"]
    ledger = [json.loads(line) for line in (tmp / "runs" / "campaign.jsonl").read_text().splitlines()]
    assert [r["missing"] for r in ledger if r["record"] == "attempt_interrupted"] == [["i3"]]
    a = accounting(load([tmp / "runs"]))
    assert (a["attempts"], a["PASS"], a["ERROR"]) == (8, 6, 2)


def test_run_refuses_an_arm_whose_support_names_no_support_before_launching(tmp_path, monkeypatch):
    items = [{"instance_id": f"i{k}", "condition": "basic"} for k in range(2)]
    lock = read_lock(locked_campaign(tmp_path, items, arm={"args": {"support": "replace:nowhere"}}))
    monkeypatch.setenv("FAKE_LAUNCH_LOG", str(tmp_path / "launched.txt"))
    with pytest.raises(ValueError, match=r"arm 00-fake-basic: support:=replace:nowhere is not a support condition"):
        run_campaign(lock, FAKE, log=lambda *_: None)
    assert not Path(lock["output_dir"]).exists() and _launched(tmp_path / "launched.txt") == []


def test_spec_values_are_rendered_as_launch_arguments_the_launcher_accepts(tmp_path):
    """`args: {record: false}` in a spec is YAML's false: the launcher takes `record:=false`."""
    from labference_ros.campaign.plan import launch_command
    from labference_ros.graphs import graph_for
    from labference_ros.launcher.arguments import parse_launch_arguments

    lock = {"launch_file": "weighing_sim.launch.py", "seeds": {"launch": 0}}
    arm = {"system": "scripted_expert", "condition": "basic", "args": {"record": False, "monitor": True,
                                                                     "camera_rate": 10.0}}
    cmd = launch_command(["labference", "launch"], lock, arm, "c.json", 2, str(tmp_path))
    assert "record:=false" in cmd and "monitor:=true" in cmd and "camera_rate:=10.0" in cmd
    values = parse_launch_arguments(graph_for("weighing_sim.launch.py"), cmd[3:])
    assert values["record"] == "false" and values["monitor"] == "true"


def test_a_chunks_launcher_error_reaches_the_console(campaign):
    _tmp, lock_path, _log = campaign
    refusing = [sys.executable, "-c", "import sys; print('starting'); "
                "print(\"Error: launch argument 'record' must be one of true, false; got 'False'\"); sys.exit(2)"]
    lines = []
    run_campaign(read_lock(lock_path), refusing, log=lines.append)
    errors = [line for line in lines if "must be one of true, false" in line]
    assert len(errors) == 3, lines  # one per chunk of two episodes
