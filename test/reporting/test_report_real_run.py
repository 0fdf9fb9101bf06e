"""`labference report` on a real launcher run directory: one scripted_expert episode
through the whole graph, then the terminal tables, report.json and report.html."""
import json
import pathlib
import subprocess
import sys

import pytest

from browser import assert_self_contained_page, needs_chromium

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "main_job"))
from test_weighing_evaluation import LABFERENCE, launch  # noqa: E402  (the main job's launcher helper)

pytestmark = pytest.mark.slow


@needs_chromium
def test_report_on_a_launcher_run_directory(tmp_path):
    out, attempts = launch(tmp_path, "expert", "system:=scripted_expert", "episodes:=1", "record:=false")
    assert len(attempts) == 1
    proc = subprocess.run([LABFERENCE, "report", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "== tested_system=scripted_expert / task_condition=basic" in proc.stdout
    assert "accounting     attempts 1 (PASS 1, FAIL 0, ERROR 0)" in proc.stdout
    assert f"wrote {out / 'report.html'}" in proc.stdout

    rep = json.loads((out / "report.json").read_text())
    (cell,) = rep["cells"]
    assert cell["cell"]["tested_system"] == "scripted_expert" and cell["cell"]["task_condition"] == "basic"
    assert cell["coverage"]["units"] == 1 and cell["coverage"]["missing"] == []
    assert cell["accounting"]["attempts"] == 1 and cell["accounting"]["PASS"] == 1
    assert cell["metrics"]["completion"]["n"] == 1
    # The bridge timed every call into the system; the scripted expert does not time its motion.
    rt = cell["runtime"]
    assert rt["inference"]["n"] == 1 and rt["inference"]["mean_s"] > 0
    assert rt["wall"]["mean_s"] > rt["inference"]["mean_s"]
    assert rt["motion"]["mean_s"] is None and rt["motion"]["unavailable"]

    seen = assert_self_contained_page(out / "report.html", tmp_path, min_images=3)
    assert "tested_system=scripted_expert" in seen["text"]
