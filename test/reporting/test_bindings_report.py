"""`labference report` over two object bindings of one family: the cells side by side with
k/N and intervals, and `--compare` pairing a held-out instance with its default twin."""
import json
import re

from click.testing import CliRunner

from labference_ros.cli.main import main
from labference_ros.reporting.report import build, format_report
from synthetic import episode, write_output_dir

UNITS = 5


def _binding_dir(tmp_path, condition, binding, successes, system="scripted"):
    """UNITS episodes of `condition`, the first `successes` of them clean successes, the
    rest a wrong first choice; a held-out binding's instances name their basic twins."""
    eps, registered = [], []
    for k in range(UNITS):
        iid = f"{condition}-0-{k:04d}"
        instance = {"binding": binding, "binding_twin": f"basic-0-{k:04d}"} if binding else {}
        ep = episode(f"{condition}-{k}", chosen="std_50" if k < successes else "std_100",
                     run_kw={"iid": iid, "system": system, "condition": condition,
                             "contract_hash": f"h-{condition}"})
        ep["run"]["instance"].update(instance)
        eps.append(ep)
        registered.append({"instance_id": iid, **instance})
    return write_output_dir(tmp_path / condition, eps, registered)


def test_report_shows_two_bindings_side_by_side_with_intervals(tmp_path):
    default = _binding_dir(tmp_path, "basic", "", successes=5)
    heldout = _binding_dir(tmp_path, "heldout_blocks", "blocks", successes=2)
    res = CliRunner().invoke(main, ["report", str(default), str(heldout), "--no-plots", "--out",
                                    str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    # One cell per binding: the held-out cell names its binding, the default one none.
    assert sorted(str(c["cell"]["binding"]) for c in rep["cells"]) == ["None", "blocks"]
    (group,) = rep["bindings"]
    assert group["task"] == "feedback_weighing" and group["shared"]["tested_system"] == "scripted"
    rows = {r["binding"]: r for r in group["rows"]}
    assert [r["binding"] for r in group["rows"]] == ["default", "blocks"]
    assert rows["default"]["condition"] == "basic" and rows["blocks"]["condition"] == "heldout_blocks"
    valid = {b: rows[b]["intervals"]["valid_completion"] for b in rows}
    assert (valid["default"]["k"], valid["default"]["n"]) == (5, 5)
    assert (valid["blocks"]["k"], valid["blocks"]["n"]) == (2, 5)
    assert valid["blocks"]["lo"] < 0.4 < valid["blocks"]["hi"] and valid["default"]["lo"] < 1.0
    # The text: a table, a row per binding, each rate as k/N with its Wilson interval.
    text = res.output.split("== bindings side by side:", 1)[1]
    lines = text.splitlines()
    assert "task=feedback_weighing" in lines[0] and "tested_system=scripted" in lines[0]
    assert lines[1].split()[:3] == ["binding", "condition", "units"] and "valid completion" in lines[1]
    default_row = next(line for line in lines if line.strip().startswith("default"))
    blocks_row = next(line for line in lines if line.strip().startswith("blocks"))
    assert re.search(r"100\.0% 5/5 \[\d+\.\d%, 100\.0%\]W", default_row), default_row
    assert re.search(r"40\.0% 2/5 \[\d+\.\d%, \d+\.\d%\]W", blocks_row), blocks_row
    assert "heldout_blocks" in blocks_row and "basic" in default_row
    # report.html has the same table.
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "Object bindings side by side: task=feedback_weighing" in page
    assert re.search(r"<td>blocks</td><td>heldout_blocks</td><td class=\"num\">5</td>"
                     r"<td class=\"num\">40\.0% 2 / 5 \[\d+\.\d%, \d+\.\d%\]", page)


def test_a_report_of_one_binding_has_no_side_by_side_table(tmp_path):
    rep = build([_binding_dir(tmp_path, "basic", "", successes=5)])
    assert rep["bindings"] == []
    assert "bindings side by side" not in format_report(rep)


def test_other_systems_are_other_groups(tmp_path):
    dirs = [_binding_dir(tmp_path / "a", "basic", "", 5), _binding_dir(tmp_path / "a", "heldout_blocks", "blocks", 2),
            _binding_dir(tmp_path / "b", "basic", "", 4, system="reader")]
    rep = build(dirs)
    (group,) = rep["bindings"]  # the reader ran one binding only
    assert group["shared"]["tested_system"] == "scripted" and len(group["rows"]) == 2


def test_compare_pairs_each_heldout_instance_with_its_default_twin(tmp_path):
    default = _binding_dir(tmp_path, "basic", "", successes=5)
    heldout = _binding_dir(tmp_path, "heldout_blocks", "blocks", successes=2)
    res = CliRunner().invoke(main, ["report", str(default), str(heldout), "--no-plots", "--out", str(tmp_path / "rep"),
                                    "--compare", "binding=blocks", "--reference", "task_condition=basic"])
    assert res.exit_code == 0, res.output
    (comparison,) = json.loads((tmp_path / "rep" / "report.json").read_text())["comparisons"]
    assert comparison["paired_units"] == UNITS and comparison["unpaired_units"] == {"candidate": [], "reference": []}
    assert comparison["candidate"]["binding"] == "blocks" and comparison["reference"]["binding"] is None
    success = comparison["paired"]["metrics"]["success"]
    assert (success["candidate_k"], success["reference_k"], success["n"]) == (2, 5, UNITS)
    assert abs(success["estimate"] + 0.6) < 1e-9 and success["lo"] < success["estimate"] < success["hi"]
    assert "paired" in res.output and "2/5 vs 5/5" in res.output


def test_only_the_rebound_conditions_default_cells_sit_beside_a_held_out_binding(tmp_path):
    """heldout_blocks repeats basic: an extended run of the same system in the same report
    is no row of the bindings table (it would read as the baseline)."""
    default = _binding_dir(tmp_path, "basic", "", successes=5)
    extended = _binding_dir(tmp_path, "extended", "", successes=1)
    heldout = _binding_dir(tmp_path, "heldout_blocks", "blocks", successes=2)
    res = CliRunner().invoke(main, ["report", str(default), str(extended), str(heldout), "--no-plots", "--out",
                                    str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    (group,) = json.loads((tmp_path / "rep" / "report.json").read_text())["bindings"]
    assert [(r["binding"], r["condition"]) for r in group["rows"]] == [("default", "basic"),
                                                                       ("blocks", "heldout_blocks")]
