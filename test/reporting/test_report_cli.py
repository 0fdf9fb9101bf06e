"""`labference report` and `labference diagnose` over synthetic launcher output."""
import json

import pytest
from click.testing import CliRunner

from labference_ros.cli.main import main
from labference_ros.reporting.diagnose import attribute
from labference_ros.reporting.report import build
from synthetic import decision, episode, run_json, scores_json, write_output_dir


def _dir(tmp_path, name="run", system="scripted", **kw):
    eps = [episode(f"{name}-ok{k}", run_kw={"iid": f"ok{k}", "system": system, **kw}) for k in range(3)]
    eps.append(episode(f"{name}-wrong", chosen="std_100", run_kw={"iid": "wrong", "system": system, **kw}))
    eps.append(episode(f"{name}-err", status="referee_shutdown", run_kw={"iid": "err", "system": system, **kw}))
    registered = [{"instance_id": i} for i in ("ok0", "ok1", "ok2", "wrong", "err", "never")]
    summary = {"episodes": [{"episode_id": e["episode_id"], "wall_s": 2.0, "usage": {"cost_usd": 0.01}}
                            for e in eps]}
    return write_output_dir(tmp_path / name, eps, registered, summary)


def test_report_tables_and_json(tmp_path):
    d = _dir(tmp_path)
    res = CliRunner().invoke(main, ["report", str(d), "--no-plots"])
    assert res.exit_code == 0, res.output
    assert "selection" in res.output and "SR" in res.output and "confusion" in res.output
    rep = json.loads((d / "report.json").read_text())
    cell = rep["cells"][0]
    assert cell["cell"]["tested_system"] == "scripted"
    assert cell["coverage"]["missing"] == ["never"]
    comp = cell["metrics"]["completion"]
    assert comp["n"] == 4 and comp["registered"] == 6
    assert comp["valid_bounds"]["lower"] == 0.5 and comp["valid_bounds"]["upper"] == 5 / 6
    a = cell["accounting"]
    assert (a["attempts"], a["PASS"], a["FAIL"], a["ERROR"]) == (5, 3, 1, 1)
    assert abs(a["time_per_success_s"] - 10 / 3) < 1e-9
    assert cell["intervals"]["selection"]["estimate"] == 0.75
    assert rep["bootstrap"] == {"level": "pair", "draws": 2000, "seed": 240926, "ci": "percentile 95%"}


def test_report_builds_one_cell_per_system(tmp_path):
    rep = build([_dir(tmp_path, "a"), _dir(tmp_path, "b", system="pi05")])
    assert sorted(c["cell"]["tested_system"] for c in rep["cells"]) == ["pi05", "scripted"]


def test_report_refuses_mismatched_identities_naming_fields(tmp_path):
    a = _dir(tmp_path, "a")
    b = _dir(tmp_path, "b", contract_hash="h-changed")
    res = CliRunner().invoke(main, ["report", str(a), str(b), "--no-plots"])
    assert res.exit_code != 0
    assert "contract_hash" in res.output and "h-changed" in res.output
    assert not (a / "report.json").exists()


def test_diagnose_attributes_each_failure_once(tmp_path):
    never = {"episode_id": "n", "run": run_json("n", "n"), "scores": scores_json("n", [decision(["std_50"], None)])}
    dropped = episode("x", executed=False)
    dwell = episode("w", executed=True, physical=False)
    invalid = episode("v", violations=["overload"])
    assert attribute(never) == "no_choice"
    assert attribute(dropped) == "execution_failure"
    assert attribute(dwell) == "dwell_never_reached"
    assert attribute(invalid) == "violation"
    assert attribute({"episode_id": "e", "run": None, "scores": None}) == "validity_error"
    d = _dir(tmp_path)
    res = CliRunner().invoke(main, ["diagnose", str(d), "--json"])
    assert res.exit_code == 0, res.output
    counts = json.loads(res.output)["cells"][0]["counts"]
    assert counts["complete"] == 3 and counts["wrong_choice"] == 1 and counts["validity_error"] == 1


def test_runner_errors_in_summary_count_as_error_attempts_in_their_cell(tmp_path):
    from labference_ros.reporting.accounting import accounting
    from labference_ros.reporting.episodes import load
    from labference_ros.reporting.identity import group_checked

    eps = [episode("ok"), episode("flagged")]
    rows = [{"episode_id": "ok", "status": "ok", "wall_s": 1.0},
            {"episode_id": "flagged", "status": "error", "error": "policy service died", "wall_s": 1.0},
            {"episode_id": "lost", "instance_id": "lost", "system": "scripted", "condition": "basic",
             "status": "error", "error": "referee never answered", "wall_s": 1.0}]
    d = write_output_dir(tmp_path / "r", eps, summary={"schema": 1, "per_episode": rows})
    cells = group_checked(load([d]))
    assert len(cells) == 1  # the record-less attempt joins the scripted/basic cell
    a = accounting(next(iter(cells.values())))
    assert (a["attempts"], a["PASS"], a["ERROR"]) == (3, 1, 2) and a["time_per_success_s"] == 3.0


def test_a_bad_compare_selector_is_refused_before_any_cell_is_bootstrapped(tmp_path, monkeypatch):
    from labference_ros.reporting import report
    from labference_ros.reporting.relative import CellSelectionError

    def no_bootstrap(*args, **kwargs):
        raise AssertionError("a cell was bootstrapped before the selectors were checked")

    d = _dir(tmp_path)
    monkeypatch.setattr(report, "cell_report", no_bootstrap)
    with pytest.raises(CellSelectionError, match="no cell"):
        build([d], comparisons=[("scripted", "nosuchsystem")])
    with pytest.raises(CellSelectionError, match="same cell"):
        build([d], comparisons=[("scripted", "tested_system=scripted")])


def test_compare_help_names_every_cell_field():
    from labference_ros.reporting.identity import CELL

    res = CliRunner().invoke(main, ["report", "--help"])
    assert res.exit_code == 0, res.output
    compare = " ".join(res.output.split("--compare", 1)[1].split("--reference", 1)[0].split())
    assert all(field in compare for field in CELL), compare


def test_report_with_an_unknown_evaluation_step_is_a_one_line_error(tmp_path):
    d = _dir(tmp_path)
    for path in (d / "episodes").glob("*/run.json"):
        run = json.loads(path.read_text())
        run["task"]["evaluation_steps"] = ["reading_ready", "no_such_step"]
        path.write_text(json.dumps(run))
    res = CliRunner().invoke(main, ["report", str(d), "--no-plots"])
    assert res.exit_code != 0
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)  # no traceback
    error = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and "no_such_step" in error[0] and "feedback_weighing" in error[0], res.output
    # An expected error about the records, not an internal failure with a logged traceback.
    assert "cannot compute SR/SSR" in error[0] and "ValueError" not in error[0], error[0]
    assert "traceback" not in res.output
    assert not (d / "report.json").exists()


def test_rates_show_k_of_n_and_an_interval_that_does_not_collapse_at_n_of_n(tmp_path):
    """Three all-correct episodes: the percentile bootstrap gives [100%, 100%], Wilson about [44%, 100%]."""
    eps = [episode(f"ok{k}", run_kw={"iid": f"ok{k}"}) for k in range(3)]
    d = write_output_dir(tmp_path / "three", eps, [{"instance_id": f"ok{k}"} for k in range(3)])
    res = CliRunner().invoke(main, ["report", str(d), "--no-plots"])
    assert res.exit_code == 0, res.output
    sel = json.loads((d / "report.json").read_text())["cells"][0]["intervals"]["selection"]
    assert (sel["method"], sel["k"], sel["n"]) == ("wilson", 3, 3)
    assert sel["lo"] == pytest.approx(0.4385, abs=1e-3) and sel["hi"] == 1.0
    assert sel["bootstrap"]["lo"] == sel["bootstrap"]["hi"] == 1.0  # what the bootstrap alone would say
    assert "selection      100.0% 3/3 [43.9%, 100.0%]W" in res.output
    assert "B_next 100.0% 3/3 [43.9%, 100.0%]W" in res.output
    html = (d / "report.html").read_text()
    assert "[43.9%, 100.0%] (3 clusters, Wilson)" in html


def test_pairs_use_the_design_effect_interval(tmp_path):
    """Both members of every pair agree: each pair counts once (3 pairs, 6 episodes)."""
    eps = [episode(f"p{k}-{r}", run_kw={"iid": f"p{k}-{r}", "pair_id": f"p{k}", "pair_role": r})
           for k in range(3) for r in "ab"]
    rep = build([write_output_dir(tmp_path / "pairs", eps)])
    sel = rep["cells"][0]["intervals"]["selection"]
    assert (sel["method"], sel["k"], sel["n"], sel["n_clusters"]) == ("wilson_design_effect", 6, 6, 3)
    assert sel["effective_n"] == 3 and sel["lo"] == pytest.approx(0.4385, abs=1e-3)
    episode_level = build([tmp_path / "pairs"], level="episode")["cells"][0]["intervals"]["selection"]
    assert episode_level["method"] == "wilson" and episode_level["lo"] == pytest.approx(0.6097, abs=1e-3)


def test_report_marks_episodes_whose_bag_holds_only_part_of_them(tmp_path):
    """An unclosed bag (a killed recorder) and one closed before the finish are partial
    evidence; a bag its recorder finished is whole; an episode without a bag is neither."""
    d = _dir(tmp_path)
    episodes = d / "episodes"

    def bag(eid: str, finish: dict | None) -> None:
        b = episodes / eid / "bag"
        b.mkdir()
        (b / "bag.mcap").write_bytes(b"\x89MCAP0\r\n")
        if finish is not None:
            custom = {"labference.finish": json.dumps(finish)}
            (b / "metadata.yaml").write_text(json.dumps({"rosbag2_bagfile_information": {"custom_data": custom}}))

    bag("run-ok0", {"status": "finished", "reason": "completed", "sim_time": 3.0})
    bag("run-ok1", None)
    bag("run-ok2", {"status": "recorder_shutdown", "reason": "recorder_shutdown"})
    res = CliRunner().invoke(main, ["report", str(d), "--no-plots"])
    assert res.exit_code == 0, res.output
    assert "partial bag for 2 episode(s): run-ok1, run-ok2" in res.output
    cell = json.loads((d / "report.json").read_text())["cells"][0]
    assert cell["partial_evidence"] == ["run-ok1", "run-ok2"]
    page = (d / "report.html").read_text()
    assert "bag holds part of the episode (audit: partial)" in page and "run-ok1, run-ok2" in page
