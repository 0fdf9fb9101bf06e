"""`report --compare`: the paired comparison of two cells' rates on the same units."""
import json

import pytest
from click.testing import CliRunner

from labference_ros.cli.main import main
from labference_ros.reporting.paired_comparison import paired_comparison
from synthetic import episode, write_output_dir


def _arm(system, n, passing, family=lambda k: f"fam{k}", unscored=()):
    out = []
    for k in range(n):
        ep = episode(f"{system}-{k}", chosen="std_50" if k in passing else "std_10",
                     status="referee_shutdown" if k in unscored else "final",
                     run_kw={"iid": f"u{k}", "system": system, "stratum": family(k)})
        ep.update(instance_id=f"u{k}", wall_s=1.0, usage={"cost_usd": 0.1})
        out.append(ep)
    return out


def test_a_large_difference_on_independent_units_is_significant_by_mcnemar():
    cand, ref = _arm("a", 12, range(12)), _arm("b", 12, range(3))
    p = paired_comparison(cand, ref)
    s = p["metrics"]["success"]
    assert (s["candidate_k"], s["reference_k"], s["n"], s["candidate_only"], s["reference_only"]) == (12, 3, 12, 9, 0)
    assert s["test"] == "mcnemar_exact" and s["p_value"] == pytest.approx(2 / 2 ** 9)
    assert s["estimate"] == pytest.approx(0.75) and 0 < s["lo"] < 0.75 < s["hi"] <= 1
    assert p["metrics"]["selection"]["n"] == 12 and p["clusters"] == 12


def test_families_are_the_clusters_and_the_test_permutes_them():
    fam = lambda k: f"fam{k // 4}"  # noqa: E731 (three families of four units)
    p = paired_comparison(_arm("a", 12, range(12), fam), _arm("b", 12, range(3), fam))
    s = p["metrics"]["success"]
    assert p["clusters"] == 3 and s["test"] == "sign_flip_exact"
    assert s["p_value"] == pytest.approx(0.25)  # three families all favour the candidate: 2/8 of sign patterns
    assert s["lo"] < 0  # three independent families cannot establish the difference


def test_units_scored_in_one_arm_only_are_left_out_of_scored_rates_but_fail_success():
    p = paired_comparison(_arm("a", 6, range(6), unscored={0}), _arm("b", 6, range(6)))
    assert p["scored_in_both"] == 5 and p["scored_in_one_arm_only"] == ["u0"]
    assert p["metrics"]["selection"]["n"] == 5 and p["metrics"]["success"]["n"] == 6
    assert p["metrics"]["success"]["reference_only"] == 1


def test_identical_arms_give_a_wide_interval_around_zero():
    s = paired_comparison(_arm("a", 3, range(3)), _arm("b", 3, range(3)))["metrics"]["success"]
    assert s["estimate"] == 0 and s["lo"] < -0.3 and s["hi"] > 0.3 and s["p_value"] == 1.0


def test_report_compare_prints_and_writes_the_paired_comparison(tmp_path):
    for system, passing in (("a", range(10)), ("b", range(2))):
        write_output_dir(tmp_path / system, _arm(system, 10, passing))
    res = CliRunner().invoke(main, ["report", str(tmp_path / "a"), str(tmp_path / "b"), "--no-plots",
                                    "--out", str(tmp_path / "out"), "--compare", "a", "--reference", "b"])
    assert res.exit_code == 0, res.output
    assert "success             10/10 vs 2/10: +80.0 pp [" in res.output and "McNemar exact p = 0.0078" in res.output
    rep = json.loads((tmp_path / "out" / "report.json").read_text())
    assert rep["comparisons"][0]["paired"]["metrics"]["valid_completion"]["p_value"] == pytest.approx(2 / 256)
    assert "Paired comparison" in (tmp_path / "out" / "report.html").read_text()
