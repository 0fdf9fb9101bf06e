"""`report` and `diagnose` do not guess: unreadable or inconsistent record files are
listed with their paths and stop them (exit 1) unless --allow-incomplete; an input
without run records is an error."""
import json

import pytest
from click.testing import CliRunner

from labference_ros.cli.main import main
from synthetic import episode, write_output_dir


def _run(tmp_path):
    eps = [episode(f"ep{k}", run_kw={"iid": f"i{k}"}) for k in range(3)]
    summary = {"per_episode": [{"episode_id": e["episode_id"], "status": "ok", "wall_s": 1.0} for e in eps]}
    return write_output_dir(tmp_path / "run", eps, [{"instance_id": f"i{k}"} for k in range(3)], summary)


@pytest.mark.parametrize("command", [["report", "--no-plots"], ["diagnose"]])
def test_corrupt_scores_json_is_listed_and_stops_the_tool(tmp_path, command):
    d = _run(tmp_path)
    bad = d / "episodes" / "ep1" / "scores.json"
    bad.write_text(bad.read_text()[:40])  # cut mid-object
    res = CliRunner().invoke(main, [command[0], str(d), *command[1:]])
    assert res.exit_code == 1, res.output
    assert f"record problem: {bad}: not valid JSON" in res.output and "--allow-incomplete" in res.output
    assert "Traceback" not in res.output and not (d / "report.json").exists()
    allowed = CliRunner().invoke(main, [command[0], str(d), *command[1:], "--allow-incomplete"])
    assert allowed.exit_code == 0, allowed.output
    assert str(bad) in allowed.output  # still listed


def test_inconsistent_and_torn_files_are_listed(tmp_path):
    d = _run(tmp_path)
    (d / "episodes" / "ep0" / "scores.json").unlink()  # the summary says it was scored
    (d / "episodes" / "ep2" / "events.jsonl").write_text('{"record": "event"}\n{"record": "ev')
    other = json.loads((d / "episodes" / "ep1" / "run.json").read_text())
    other["episode_id"] = "someone-else"
    (d / "episodes" / "ep1" / "run.json").write_text(json.dumps(other))
    res = CliRunner().invoke(main, ["diagnose", str(d)])
    assert res.exit_code == 1
    assert f"{d / 'episodes' / 'ep0' / 'scores.json'}: missing, but" in res.output
    assert f"{d / 'episodes' / 'ep2' / 'events.jsonl'}: ends in a partial line" in res.output
    assert f"{d / 'episodes' / 'ep1' / 'scores.json'}: is episode 'ep1' but run.json is episode 'someone-else'" \
        in res.output


@pytest.mark.parametrize("command", ["report", "diagnose"])
def test_an_empty_folder_is_an_error(tmp_path, command):
    (tmp_path / "empty").mkdir()
    res = CliRunner().invoke(main, [command, str(tmp_path / "empty")])
    assert res.exit_code == 1 and "no run records" in res.output and "Traceback" not in res.output
