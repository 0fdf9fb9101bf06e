"""Certification before inclusion (issue 52 item 1): the family's reference program
solves each instance in-process; an instance it cannot solve is rejected with its
failing step, a campaign lock refuses it, and the report counts it."""
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from labference_ros.core.certificates import certificates_of, refusal, summary
from labference_ros.campaign.lock import build_lock
from labference_ros.cli.main import main
from labference_ros.tasks import family

from certified import certified_list

GIT = ["git", "-c", "user.email=t@example.org", "-c", "user.name=t"]
LABFERENCE = [sys.executable, "-c", "from labference_ros.cli.main import main; main()"]
OUT_OF_REACH = [1.6, 0.0]  # table x/y far beyond the arm: no grasp of the standard can be planned


def _spec(tmp_path: Path, population: str) -> Path:
    code = tmp_path / "code"
    (code / "pkg").mkdir(parents=True, exist_ok=True)
    (code / "pkg" / "m.py").write_text("X = 1\n")
    subprocess.run([*GIT, "init", "-q"], cwd=code, check=True)
    subprocess.run([*GIT, "add", "."], cwd=code, check=True)
    subprocess.run([*GIT, "commit", "-qm", "init"], cwd=code, check=True)
    spec = {"name": "cert", "output_dir": "runs", "code_root": "code", "code_paths": ["pkg"],
            "dependencies": ["numpy"],
            "arms": [{"id": "expert", "system": "scripted_expert", "condition": "basic", "instances": population}]}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    return tmp_path / "spec.yaml"


# -- the lock's check, on stand-in certificates (no simulator) -------------------------------
def test_refusal_names_uncertified_edited_and_rejected_instances():
    item = {"instance_id": "i0", "condition": "basic", "target_g": 10}
    good = certified_list([item])["certification"]["certificates"]["i0"]
    assert refusal(item, good) is None
    assert "not certified" in refusal(item, None)
    assert "changed after it was certified" in refusal({**item, "target_g": 11}, good)
    bad = {**good, "verdict": "rejected", "failing_step": "transferred", "reason": "no plan"}
    assert refusal(item, bad) == "instance i0 failed certification at step transferred: no plan"
    s = summary({"i0": bad}, ["i0", "i1"])
    assert (s["certified"], s["rejected"], s["uncertified"], s["rejected_by_step"]) == (0, 1, 1, {"transferred": 1})


def test_the_lock_refuses_an_uncertified_list_in_one_line(tmp_path):
    (tmp_path / "list.json").write_text(json.dumps({"schema": 1, "instances": [{"instance_id": "i0"}]}))
    spec = _spec(tmp_path, "list.json")
    with pytest.raises(ValueError, match="arm expert: instance i0 is not certified"):
        build_lock(spec)
    res = CliRunner().invoke(main, ["campaign", "lock", str(spec)])
    assert res.exit_code == 1 and "instance i0 is not certified" in res.output
    assert not (tmp_path / "spec.lock.json").exists()


def test_certify_help_lists_its_arguments():
    res = CliRunner().invoke(main, ["certify", "--help"])
    assert res.exit_code == 0
    for name in ("task:=", "system:=", "deadline_s:=", "cameras:=", "frames:="):
        assert name in res.output
    res = CliRunner().invoke(main, ["certify", ".", "nonsense:=1"])
    assert res.exit_code == 2 and "unknown argument 'nonsense'" in res.output


# -- the acceptance: a generated population with an unsolvable instance injected ------------
@pytest.mark.slow
def test_an_unreachable_instance_is_rejected_refused_by_the_lock_and_counted(tmp_path):
    fam = family("feedback_weighing")
    pop = tmp_path / "pop"
    pop.mkdir()
    fam.write_instances(pop / "instances.json", fam.generate("basic", 2, 0, 0, 0), meta={"source": "generated"})
    data = json.loads((pop / "instances.json").read_text())
    good, bad = data["instances"]
    # Inject an unsolvable instance: the standard it must add lies beyond the arm's reach.
    bad["layout"][bad["goal_set"][0]] = OUT_OF_REACH
    (pop / "instances.json").write_text(json.dumps(data))

    out = subprocess.run([*LABFERENCE, "certify", str(pop)], capture_output=True, text=True, timeout=500)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    assert f"{good['instance_id']}: certified" in out.stdout
    assert f"{bad['instance_id']}: rejected at step required_standard_chosen" in out.stdout
    assert "could not plan" in out.stdout  # why: the reference planner cannot reach the standard
    assert "1/2 instance(s) certified, 1 rejected" in out.stdout

    data = json.loads((pop / "instances.json").read_text())
    certs = certificates_of(data)
    ok, rejected = certs[good["instance_id"]], certs[bad["instance_id"]]
    assert data["certification"]["summary"]["rejected_by_step"] == {"required_standard_chosen": 1}
    assert ok["verdict"] == "certified" and ok["failing_step"] is None
    assert ok["program"]["system"] == "scripted_expert" and ok["program"]["labference_ros"]
    assert ok["seeds"] == {"task_seed": good["task_seed"], "layout_seed": good["layout_seed"],
                           "policy_seed": good["policy_seed"]}
    assert ok["scene_hash"] and ok["end_reason"] == "completed"
    # Every ordered step held, each with its first instant, in order.
    assert [s["name"] for s in ok["steps"]] == list(fam.contract_for("basic").evaluation_steps)
    times = [s["t"] for s in ok["steps"]]
    assert all(s["holds"] for s in ok["steps"]) and times == sorted(times) and None not in times
    # Key frames: start, one per step, end; the PNG beside the certificate has the recorded hash.
    labels = [f["label"] for f in ok["frames"]]
    assert labels[0] == "start" and labels[-1] == "end" and len(labels) == len(times) + 2
    for f in ok["frames"] + rejected["frames"]:
        png = (pop / f["file"]).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and hashlib.sha256(png).hexdigest() == f["sha256"]
    assert rejected["verdict"] == "rejected" and rejected["failing_step"] == "required_standard_chosen"
    assert not rejected["steps"][1]["holds"]

    # The lock refuses the rejected instance: one line naming it and why, exit 1, no traceback.
    spec = _spec(tmp_path, "pop/instances.json")
    out = subprocess.run([*LABFERENCE, "campaign", "lock", str(spec)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: arm expert: ")
    assert f"instance {bad['instance_id']} failed certification at step required_standard_chosen" in lines[0]
    assert not (tmp_path / "spec.lock.json").exists()

    # Fixed without it, the population is certified throughout and locks, certificates included;
    # the population's summary still counts the rejected instance and says why.
    out = subprocess.run([*LABFERENCE, "certify", str(pop / "instances.json"), "drop_rejected:=true"],
                         capture_output=True, text=True, timeout=500)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1/2 instance(s) certified, 1 rejected; 1 rejected instance(s) left out of the population" in out.stdout
    data = json.loads((pop / "instances.json").read_text())
    assert [i["instance_id"] for i in data["instances"]] == [good["instance_id"]]
    assert [i["instance_id"] for i in data["certification"]["rejected_instances"]] == [bad["instance_id"]]
    lock = build_lock(spec)
    assert [i["instance_id"] for i in lock["arms"][0]["instances"]] == [good["instance_id"]]
    assert lock["arms"][0]["certificates"][good["instance_id"]]["verdict"] == "certified"
    population = lock["arms"][0]["population_certification"]
    assert (population["instances"], population["certified"], population["rejected"]) == (2, 1, 1)
    assert population["rejections"][0]["failing_step"] == "required_standard_chosen"


@pytest.mark.slow
def test_an_arm_generated_at_lock_time_is_certified_there(tmp_path):
    spec = _spec(tmp_path, "unused.json")
    data = yaml.safe_load(spec.read_text())
    data["arms"][0].pop("instances")
    data["arms"][0]["generate"] = {"n": 1, "task_seed": 3, "layout_seed": 3, "policy_seed": 3}
    spec.write_text(yaml.safe_dump(data))
    lock = build_lock(spec)
    (iid,) = [i["instance_id"] for i in lock["arms"][0]["instances"]]
    cert = lock["arms"][0]["certificates"][iid]
    assert cert["verdict"] == "certified"
    assert all(Path(f["file"]).is_file() and str(tmp_path / "spec.certification" / "expert") in f["file"]
               for f in cert["frames"])


@pytest.mark.slow
@pytest.mark.parametrize("task,condition", [("centrifuge_loading", "basic"), ("placement_recall", "extended-distinct")])
def test_every_family_certifies_its_generated_instances(tmp_path, task, condition):
    """Through the family interface alone (reference_program, certification_steps)."""
    from labference_ros.campaign.certify import certify_instance

    fam = family(task)
    (inst,) = fam.generate(condition, 1, 0, 0, 0)
    cert = certify_instance(fam, inst, frames_dir=tmp_path)
    assert cert["verdict"] == "certified", cert["reason"]
    assert [s["name"] for s in cert["steps"]] == list(fam.contract_for(condition).evaluation_steps)


# -- the report ---------------------------------------------------------------------------
def test_a_run_of_a_certified_population_reports_what_certification_rejected(tmp_path):
    """The launcher's plan carries the population's certification summary into the run's
    instances.json (from a certified list or a campaign chunk); the report states it."""
    from synthetic import episode, write_output_dir

    from labference_ros.episodes.plan import RunSettings, write_plan

    fam = family("feedback_weighing")
    insts = fam.generate("basic", 2, 0, 0, 0)
    items = [json.loads(i.to_json()) for i in insts]
    listed = certified_list(items[:1])
    rejected = {**listed["certification"]["certificates"][items[0]["instance_id"]], "verdict": "rejected",
                "instance_id": items[1]["instance_id"], "failing_step": "transferred", "reason": "no grasp"}
    listed["certification"]["summary"] = summary({**listed["certification"]["certificates"],
                                                  items[1]["instance_id"]: rejected},
                                                 [i["instance_id"] for i in items])
    (tmp_path / "list.json").write_text(json.dumps(listed))
    run = tmp_path / "run"
    settings = RunSettings(episodes=1, system="scripted", condition="basic", seed=0, output_dir=str(run),
                           instances=str(tmp_path / "list.json"), deadline_s=60, step_mode="sync", camera_rate=10)
    write_plan(run, settings, insts[:1])
    write_output_dir(run, [episode("0000_" + items[0]["instance_id"])])
    res = CliRunner().invoke(main, ["report", str(run), "--no-plots"])
    assert res.exit_code == 0, res.output
    assert (f"certification  population: 1/2 generated instance(s) certified, 1 failed certification "
            f"({items[1]['instance_id']}: step transferred: no grasp)") in res.output
