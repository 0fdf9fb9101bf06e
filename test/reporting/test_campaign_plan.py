"""`labference campaign plan`: the answer printed and written into the spec, which the lock holds arms to."""
import json
import subprocess

import pytest
import yaml
from click.testing import CliRunner

from labference_ros.campaign.lock import build_lock
from labference_ros.cli.main import main
from certified import certified_list

GIT = ["git", "-c", "user.email=t@example.org", "-c", "user.name=t"]


def spec_file(tmp_path, n) -> "Path":  # noqa: F821
    code = tmp_path / "code"
    (code / "pkg").mkdir(parents=True)
    (code / "pkg" / "a.py").write_text("X = 1\n")
    subprocess.run([*GIT, "init", "-q"], cwd=code, check=True)
    subprocess.run([*GIT, "add", "."], cwd=code, check=True)
    subprocess.run([*GIT, "commit", "-qm", "init"], cwd=code, check=True)
    items = [{"instance_id": f"i{k}", "condition": "basic"} for k in range(n)]
    (tmp_path / "list.json").write_text(json.dumps(certified_list(items)))
    path = tmp_path / "spec.yaml"
    path.write_text("# pilot comparison\nname: p\noutput_dir: runs\ncode_root: code\ncode_paths: [pkg]\n"
                    "dependencies: [numpy]\narms:\n  - {system: scripted_expert, condition: basic, instances: list.json}\n")
    return path


def test_plan_prints_and_writes_the_answer_into_the_spec(tmp_path):
    spec = spec_file(tmp_path, 50)
    res = CliRunner().invoke(main, ["campaign", "plan", str(spec), "--p0", "0.5", "--p1", "0.8"])
    assert res.exit_code == 0, res.output
    assert "fixed N (exact McNemar): 46 episodes per arm" in res.output and "at most 70 episodes" in res.output
    text = spec.read_text()
    assert text.startswith("# pilot comparison\n")  # the spec as written is kept
    planned = yaml.safe_load(text)["plan"]
    assert planned["fixed"]["episodes_per_arm"] == 46 and planned["sequential"]["max_episodes_per_arm"] == 70
    lock = build_lock(spec)
    assert lock["spec"]["plan"]["fixed"]["episodes_per_arm"] == 46 and lock["design"] == {"kind": "fixed"}
    again = CliRunner().invoke(main, ["campaign", "plan", str(spec), "--p0", "0.5", "--p1", "0.8"])
    assert again.exit_code == 1 and "already has a plan" in again.output and "McNemar" not in again.output


def test_the_lock_refuses_arms_below_the_plan(tmp_path):
    spec = spec_file(tmp_path, 20)
    assert CliRunner().invoke(main, ["campaign", "plan", str(spec), "--p0", "0.5", "--p1", "0.8"]).exit_code == 0
    with pytest.raises(ValueError, match="locks 20 episodes, below the 46 the spec's plan needs"):
        build_lock(spec)


def test_dry_run_writes_nothing_and_bad_rates_are_one_line_errors(tmp_path):
    spec = spec_file(tmp_path, 50)
    before = spec.read_text()
    res = CliRunner().invoke(main, ["campaign", "plan", str(spec), "--p0", "0.2", "--p1", "0.4",
                                    "--episodes", "30", "--dry-run"])
    assert res.exit_code == 0 and "with 30 episodes" in res.output and spec.read_text() == before
    bad = CliRunner().invoke(main, ["campaign", "plan", "--p0", "0.3", "--p1", "0.3"])
    assert bad.exit_code == 1 and "no difference to detect" in bad.output and "Traceback" not in bad.output
