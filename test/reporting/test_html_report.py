"""report.html: self-contained, opens in headless Chromium, escapes record text, shows
unavailable values as unavailable; the runtime split takes only what the records carry."""
import json
from types import SimpleNamespace

from click.testing import CliRunner

from browser import assert_self_contained_page, needs_chromium
from labference_ros.cli.main import main
from labference_ros.oracle.diagnose import interface_errors
from labference_ros.policies import make
from labference_ros.policies.agent.accounting import ActionRecord
from labference_ros.reporting import html_report
from labference_ros.reporting.oracle_gains import gains_record
from labference_ros.reporting.report import build
from labference_ros.reporting.runtime import read_policy_records, split, summarize
from synthetic import episode, write_output_dir


def _arm_dir(root, system, cost, wall, failing=(), n=8):
    eps = [episode(f"{system}-{k}", chosen="std_10" if k in failing else "std_50",
                   run_kw={"iid": f"u{k}", "system": system, "stratum": f"fam{k // 2}"}) for k in range(n)]
    summary = {"per_episode": [{"episode_id": e["episode_id"], "wall_s": wall, "usage": {"cost_usd": cost}}
                               for e in eps]}
    d = write_output_dir(root / system, eps, [{"instance_id": f"u{k}"} for k in range(n)], summary)
    for e in eps:  # the policy bridge's inference timing, one chunk per episode
        (d / "episodes" / e["episode_id"] / "policy_actions.jsonl").write_text(
            json.dumps({"record": "chunk", "inference_wall_s": wall / 4}) + "\n")
    return d


def _oracle_gains(path):
    # The base row's interface errors as diagnose_oracle measures them on its base branches.
    base = [SimpleNamespace(readout_abs_error_g=2.5, geometry_error={"valid": True, "e_p_m": 0.0125,
                                                                     "e_v_rad": 0.03}),
            SimpleNamespace(readout_abs_error_g=None, geometry_error={"valid": False, "e_p_m": None,
                                                                      "e_v_rad": None})]
    result = {"system": "misreader", "design": "checkpoint_continuation",
              "population": [{"checkpoint_id": "c0", "status": "verified", "reason": ""}],
              "table": {"base": {"N": 1, "compatibility": "compatible", "mean_choice_correct": 0.0,
                                 "interface_errors": interface_errors(base)},
                        "replace:state": {"N": 1, "compatibility": "compatible", "unresolved": 0,
                                          "gain_choice_correct": 1.0, "choice_correct_supported": 1,
                                          "choice_correct_base": 0, "gain_completed": 0.0,
                                          "completed_supported": 0, "completed_base": 0,
                                          "completed_bounds": (0.0, 0.0), "interventions": 1, "delivered": 1,
                                          "delivery_rate": 1.0, "agreement_rate": None},
                        "replace:geometry": {"N": 1, "compatibility": "incompatible_interface"}},
              "interactions": {}, "branches": {"base": [object()]}}  # branch objects are not kept
    path.write_text(json.dumps(gains_record(result)))


@needs_chromium
def test_report_html_opens_in_chromium_with_embedded_plots_and_no_requests(tmp_path):
    root = tmp_path / "runs"
    _arm_dir(root, "cheap", cost=0.01, wall=5.0, failing={3})
    _arm_dir(root, "dear", cost=0.05, wall=20.0, failing={3, 6})
    _oracle_gains(root / "oracle_gains.json")
    res = CliRunner().invoke(main, ["report", str(root), "--compare", "cheap", "--reference", "dear",
                                    "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert "relative rule" in res.output and "verdict        PASS" in res.output
    page = tmp_path / "out" / "report.html"
    assert "wrote " + str(page) in res.output
    # selection vs completion, runtime, one confusion matrix per cell
    seen = assert_self_contained_page(page, tmp_path, min_images=4)
    text = seen["text"]
    assert "Relative rule" in text and "PASS" in text
    assert "tested_system=cheap" in text and "tested_system=dear" in text
    assert "replace:state" in text and "incompatible_interface" in text  # the oracle gain table
    assert "motion (system-timed execution)" in text
    rep = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [c["verdict"] for c in rep["comparisons"]] == ["pass"]
    assert rep["cells"][0]["runtime"]["inference"]["mean_s"] == 1.25


def test_record_text_is_escaped_and_unavailable_is_never_zero(tmp_path):
    system = "<b>bold</b>&co"
    d = write_output_dir(tmp_path / "run", [episode("e0", run_kw={"iid": "u0", "system": system})],
                         [{"instance_id": "u0"}])
    page = html_report.render(build([d]), {})
    assert "&lt;b&gt;bold&lt;/b&gt;&amp;co" in page and "<b>bold" not in page
    # No episode had its operation fixed for the system: E_fixed has an empty population.
    row = page.split("E_fixed (eq. 6)</td>", 1)[1].split("</tr>", 1)[0]
    assert "unavailable" in row and "0.0%" not in row
    # Nothing recorded usage: cost per success is unknown, not 0.
    row = page.split("cost per success (USD)</td>", 1)[1].split("</tr>", 1)[0]
    assert "unavailable" in row and ">0<" not in row


def test_no_plots_writes_the_page_without_images(tmp_path):
    d = _arm_dir(tmp_path, "cheap", cost=0.01, wall=5.0)
    # An earlier report's plots in the same directory, and a file the report does not own.
    for name in ("selection_completion.png", "runtime.png", "confusion_0.png", "confusion_12.png", "photo.png"):
        (d / name).write_bytes(b"\x89PNG stale")
    res = CliRunner().invoke(main, ["report", str(d), "--no-plots"])
    assert res.exit_code == 0, res.output
    page = (d / "report.html").read_text()
    assert "<img" not in page and "plots skipped (--no-plots)" in page
    assert [p.name for p in d.glob("*.png")] == ["photo.png"]
    assert json.loads((d / "report.json").read_text())["plots"] == []


def _agent_system_summary(wall_s: float) -> dict:
    """The policy bridge's system_summary line for an agent episode whose one pick took
    wall_s: the driver's own end-of-episode summary, recorded as the bridge records it."""
    system = make("agent", agent_model="m")
    system.account.actions.append(ActionRecord(1, "pick", {"object": "std_50"}, ok=True, moved=True,
                                               physical=True, sim_s=2.0, wall_s=wall_s))
    return {"record": "system_summary", **system.end_episode("completed")}


def test_runtime_split_takes_only_recorded_parts():
    chunks = [{"record": "chunk", "inference_wall_s": 0.5}, {"record": "chunk", "inference_wall_s": 1.5},
              {"record": "receipt"}]
    plain = split(30.0, chunks)
    assert plain == {"wall": 30.0, "inference": 2.0, "motion": None, "waiting": None}
    timed = split(30.0, chunks + [_agent_system_summary(20.0)])
    assert timed == {"wall": 30.0, "inference": 2.0, "motion": 20.0, "waiting": 8.0}
    # Records from before the summary kept its usage: the time at the top level.
    old = split(30.0, chunks + [{"record": "system_summary", "physical_execution_wall_s": 20.0}])
    assert old == timed
    assert split(None, None) == {"wall": None, "inference": None, "motion": None, "waiting": None}
    s = summarize([plain, split(10.0, None)])
    assert s["inference"]["n"] == 1 and s["inference"]["mean_s"] == 2.0
    assert s["wall"]["mean_s"] == 20.0
    assert s["motion"]["mean_s"] is None and "does not record its motion" in s["motion"]["unavailable"]
    assert s["not_inference"] == {"mean_s": 28.0, "n": 1}


def test_agent_motion_time_reaches_the_report_and_a_torn_last_line_is_skipped(tmp_path):
    d = _arm_dir(tmp_path, "agent", cost=0.01, wall=5.0, n=2)
    for k, ep in enumerate(sorted((d / "episodes").iterdir())):
        with open(ep / "policy_actions.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps({"episode_id": ep.name, **_agent_system_summary(3.0)}) + "\n")
            if k == 0:
                f.write('{"record": "chunk", "inference_wa')  # the bridge was killed mid-line
    assert read_policy_records(d / "episodes" / "missing") is None
    (cell,) = build([d], draws=50)["cells"]
    rt = cell["runtime"]
    assert rt["motion"]["n"] == 2 and rt["motion"]["mean_s"] == 3.0
    assert rt["inference"]["mean_s"] == 1.25 and rt["waiting"]["mean_s"] == 0.75


def test_oracle_gain_table_shows_the_base_interface_errors(tmp_path):
    d = _arm_dir(tmp_path, "misreader", cost=0.01, wall=5.0, n=2)
    _oracle_gains(d / "oracle_gains.json")
    page = html_report.render(build([d], draws=50), {})
    section = page.split("Oracle gain tables", 1)[1]
    assert "replace:state" in section and "incompatible_interface" in section
    for label, value in (("state readout |error|, mean", "2.5 g"), ("geometry e_p (eq. 2), mean", "0.0125 m"),
                         ("geometry e_v (eq. 2), mean", "0.03 rad"), ("geometry reports invalid / all", "1 / 2")):
        row = section.split(label + "</td>", 1)[1].split("</tr>", 1)[0]
        assert value in row, (label, row)


def test_a_task_familys_own_lines_are_on_the_page_escaped(tmp_path):
    d = write_output_dir(tmp_path / "run", [episode("e0", run_kw={"iid": "u0"})], [{"instance_id": "u0"}])
    rep = build([d])
    assert "task family" not in html_report.render(rep, {})  # weighing has no lines of its own
    rep["cells"][0]["family"] = {"retrieval": "reached 2/2, chosen 2, correct 2/2 <A1>"}
    page = html_report.render(rep, {})
    row = page.split("<td>retrieval</td>", 1)[1].split("</tr>", 1)[0]
    assert "correct 2/2 &lt;A1&gt;" in row


def test_a_remote_policys_request_latency_reaches_the_text_and_html_report(tmp_path):
    d = _arm_dir(tmp_path, "openpi", cost=0.01, wall=5.0, n=2)
    for k, ep in enumerate(sorted((d / "episodes").iterdir())):
        # Chunk records as the episode loop writes them for a remote policy (policies/latency.py).
        lines = [{"record": "chunk", "inference_wall_s": 0.1,
                  "latency": {"round_trip_s": 0.1 * (k + 1) + 0.01 * j, "server_timing": {"infer_ms": 50.0 + j}}}
                 for j in range(3)]
        (ep / "policy_actions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    (cell,) = build([d], draws=50)["cells"]
    req = cell["runtime"]["policy_requests"]
    assert req["requests"] == 6
    assert req["round_trip_s"]["max"] == 0.22
    assert req["server_timing"]["infer_ms"]["p50"] == 51.0
    res = CliRunner().invoke(main, ["report", str(d), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert "requests       6 to the policy server: round trip median" in res.output
    assert "server's infer_ms: median 51" in res.output
    assert "policy server requests (6)" in (tmp_path / "out" / "report.html").read_text()


def test_a_local_system_has_no_request_latency_line(tmp_path):
    d = _arm_dir(tmp_path, "scripted", cost=0.01, wall=5.0, n=2)
    (cell,) = build([d], draws=50)["cells"]
    assert cell["runtime"]["policy_requests"] == {"requests": 0, "round_trip_s": None, "server_timing": {}}
    res = CliRunner().invoke(main, ["report", str(d), "--out", str(tmp_path / "out")])
    assert "to the policy server" not in res.output
