"""A pre-registered sequential comparison in a campaign: lock, early stop, run to the maximum.

The stopping logic is pure (campaign/sequential.decide, core/sequential); the campaign
runs use the fake launcher, so no graph starts."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from labference_ros.campaign import sequential
from labference_ros.campaign.lock import build_lock, read_lock, verify, write_lock
from labference_ros.campaign.runner import ledger_records, run_campaign
from labference_ros.cli.main import main
from certified import certified_list

HERE = Path(__file__).resolve().parent
FAKE = [sys.executable, str(HERE / "fake_launcher.py")]
GIT = ["git", "-c", "user.email=t@example.org", "-c", "user.name=t"]
CAMPAIGN_DOMAIN = os.environ["ROS_DOMAIN_ID"]


@pytest.fixture(autouse=True)
def campaign_domain(monkeypatch):
    monkeypatch.setenv("ROS_DOMAIN_ID", CAMPAIGN_DOMAIN)


def write_spec(tmp_path, n=20, max_episodes=16, sequential_block=None, reference_list="list.json", **extra) -> Path:
    code = tmp_path / "code"
    (code / "pkg").mkdir(parents=True, exist_ok=True)
    (code / "pkg" / "scorer.py").write_text("THRESHOLD = 1.0\n")
    subprocess.run([*GIT, "init", "-q"], cwd=code, check=True)
    subprocess.run([*GIT, "add", "."], cwd=code, check=True)
    subprocess.run([*GIT, "commit", "-qm", "init"], cwd=code, check=True)
    items = [{"instance_id": f"i{k:02d}", "condition": "basic"} for k in range(n)]
    (tmp_path / "list.json").write_text(json.dumps(certified_list(items)))
    (tmp_path / "other.json").write_text(json.dumps(certified_list(items[::-1])))
    arm = {"condition": "basic"}
    spec = {"name": "seq", "output_dir": "runs", "chunk_size": 2, "code_root": "code", "code_paths": ["pkg"],
            "dependencies": ["numpy"],
            "arms": [{"id": "cand", "system": "scripted_expert", **arm, "instances": "list.json"},
                     {"id": "ref", "system": "fixed_preference", **arm, "instances": reference_list}],
            "sequential": sequential_block or {"alpha": 0.05, "max_episodes": max_episodes,
                                               "comparisons": [{"candidate": "cand", "reference": "ref"}]},
            **extra}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    return tmp_path / "spec.yaml"


def launched(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def run(tmp_path, monkeypatch, wrong_arms=""):
    lock_path = write_lock(build_lock(write_spec(tmp_path)), tmp_path / "spec.lock.json")
    before = lock_path.read_bytes()
    log = tmp_path / "launched.txt"
    monkeypatch.setenv("FAKE_LAUNCH_LOG", str(log))
    monkeypatch.setenv("FAKE_WRONG_ARMS", wrong_arms)
    lock = read_lock(lock_path)
    cov = run_campaign(lock, launcher=FAKE, log=lambda *_: None)
    assert lock_path.read_bytes() == before and verify(read_lock(lock_path)) == {}  # the lock is untouched
    assert (Path(lock["output_dir"]) / "LOCK_DIGEST").read_text().strip() == lock["lock_sha256"]
    return lock, cov, launched(log)


def test_a_large_difference_stops_early_and_the_ledger_says_why(tmp_path, monkeypatch):
    lock, cov, ran = run(tmp_path, monkeypatch, wrong_arms="ref")
    assert lock["design"]["kind"] == "sequential" and lock["design"]["sequential"]["max_episodes"] == 16
    # Jeffreys mixture at alpha 0.05: seven one-sided discordant units cross 1/alpha. Chunks of two
    # alternate between the arms, so eight units per arm ran, not the sixteen of the maximum.
    assert len(ran) == 16 and ran.count("i07") == 2 and "i08" not in ran
    stops = [r for r in ledger_records(Path(lock["output_dir"])) if r["record"] == "sequential_stop"]
    assert len(stops) == 1 and stops[0]["status"] == "boundary" and stops[0]["pairs"] == 7
    assert stops[0]["better"] == "candidate" and "e-value" in stops[0]["reason"] and stops[0]["last_unit"] == "i06"
    skipped = [r for r in ledger_records(Path(lock["output_dir"])) if r["record"] == "chunk_skipped"]
    assert skipped and all(r["reason"] == "sequential comparison stopped" for r in skipped)
    assert cov["complete"] is True and cov["cand"]["missing"] == [] and cov["cand"]["not_needed"] == 13
    assert cov["sequential"][0]["status"] == "boundary"
    # The report re-derives the stop from the records and refuses a fixed-N test on them.
    runs = lock["output_dir"]
    res = CliRunner().invoke(main, ["report", runs, "--no-plots", "--out", str(tmp_path / "rep"),
                                    "--compare", "scripted_expert", "--reference", "fixed_preference"])
    assert res.exit_code == 0, res.output
    assert "decision       boundary: e-value 26.81 >= 1/alpha = 20 after 7 units" in res.output
    assert "relative rule" not in res.output
    assert "design         sequential campaign: it stopped on its results" in res.output
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert rep["comparisons"][0]["sequential"]["pairs"] == 7
    assert "pre-registered sequential test" in (tmp_path / "rep" / "report.html").read_text()
    fixed = CliRunner().invoke(main, ["report", runs, "--no-plots", "--out", str(tmp_path / "rep"), "--test", "fixed",
                                      "--compare", "scripted_expert", "--reference", "fixed_preference"])
    assert fixed.exit_code == 1 and "a fixed-N test on them is not valid" in fixed.output
    # A second run launches nothing and records the stop only once.
    again = run_campaign(lock, launcher=FAKE, log=lambda *_: None)
    assert again["complete"] and len(launched(tmp_path / "launched.txt")) == 16
    assert sum(r["record"] == "sequential_stop" for r in ledger_records(Path(lock["output_dir"]))) == 1


def test_no_difference_runs_to_the_maximum(tmp_path, monkeypatch):
    lock, cov, ran = run(tmp_path, monkeypatch)
    assert len(ran) == 32 and "i15" in ran and "i16" not in ran
    stop = [r for r in ledger_records(Path(lock["output_dir"])) if r["record"] == "sequential_stop"][0]
    assert stop["status"] == "max_reached" and stop["pairs"] == 16 and "no difference established" in stop["reason"]
    assert cov["complete"] is True and cov["ref"]["not_needed"] == 4


def test_decisions_read_units_in_locked_order_up_to_the_first_unfinished():
    design = {"alpha": 0.05, "max_episodes": 10, "prior": 0.5,
              "comparisons": [{"candidate": "c", "reference": "r", "order": [f"u{k}" for k in range(10)]}]}
    cand = {f"u{k}": True for k in range(10)}
    ref = {f"u{k}": False for k in range(10) if k != 3}  # u3 not finished in the reference yet
    d = sequential.decide(design, {"c": cand, "r": ref})[0]
    assert d["status"] == "running" and d["pairs"] == 3 and d["last_unit"] == "u2"
    ref["u3"] = False
    d = sequential.decide(design, {"c": cand, "r": ref})[0]
    assert d["status"] == "boundary" and d["pairs"] == 7
    assert sequential.needed(design, [d]) == {"c": {f"u{k}" for k in range(7)}, "r": {f"u{k}" for k in range(7)}}


@pytest.mark.parametrize("change,message", [
    ({"sequential_block": {"max_episodes": 5, "comparisons": [{"candidate": "cand", "reference": "nosuch"}]}},
     "no arm 'nosuch'"),
    ({"reference_list": "other.json"}, "same instances in the same order"),
    ({"max_episodes": 25}, "exceeds the 20 locked"),
    ({"plan": {"p0": 0.5, "p1": 0.8, "alpha": 0.05, "power": 0.8, "sequential": {"max_episodes_per_arm": 70}}},
     "below the 70 the spec's plan needs"),
])
def test_lock_refuses_a_comparison_that_cannot_run(tmp_path, change, message):
    with pytest.raises(ValueError, match=message):
        build_lock(write_spec(tmp_path, **change))


def test_the_lock_hashes_the_sequential_spec(tmp_path):
    a = build_lock(write_spec(tmp_path / "a", max_episodes=16))
    b = build_lock(write_spec(tmp_path / "b", max_episodes=15))
    assert a["design"]["sequential"]["comparisons"][0]["order"][-1] == "i15"
    assert a["spec_sha256"] != b["spec_sha256"]
    lock = dict(a, design={"kind": "fixed"})
    assert "lock_sha256" in verify(lock)  # an edited design no longer matches the lock's digest


def test_report_refuses_a_sequential_test_on_fixed_runs(tmp_path):
    from synthetic import episode, write_output_dir

    for system in ("scripted_expert", "fixed_preference"):
        write_output_dir(tmp_path / system, [episode(f"{system}-{k}", run_kw={"iid": f"u{k}", "system": system})
                                             for k in range(4)])
    args = ["report", str(tmp_path), "--no-plots", "--compare", "scripted_expert", "--reference", "fixed_preference"]
    res = CliRunner().invoke(main, args + ["--test", "sequential"])
    assert res.exit_code == 1 and "never pre-registered" in res.output and "Traceback" not in res.output
    assert CliRunner().invoke(main, args).exit_code == 0  # fixed-N by default, as designed
