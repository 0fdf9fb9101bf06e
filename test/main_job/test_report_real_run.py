"""`labference report` on a real launcher run directory: the two scripted_expert
episodes of the main job's unrecorded run (conftest.expert_runs), then the
terminal tables, report.json and report.html."""
import json
import os
import subprocess
import sys

import pytest
from browser import assert_self_contained_page, needs_chromium

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")

pytestmark = pytest.mark.slow


@needs_chromium
def test_report_on_a_launcher_run_directory(expert_runs, tmp_path):
    out, output, status = expert_runs["expert2"]
    assert status == 0, output[-4000:]
    proc = subprocess.run([LABFERENCE, "report", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "== tested_system=scripted_expert / task_condition=basic" in proc.stdout
    assert "accounting     attempts 2 (PASS 2, FAIL 0, ERROR 0)" in proc.stdout
    assert f"wrote {out / 'report.html'}" in proc.stdout

    rep = json.loads((out / "report.json").read_text())
    (cell,) = rep["cells"]
    assert cell["cell"]["tested_system"] == "scripted_expert" and cell["cell"]["task_condition"] == "basic"
    assert cell["coverage"]["units"] == 2 and cell["coverage"]["missing"] == []
    assert cell["accounting"]["attempts"] == 2 and cell["accounting"]["PASS"] == 2
    assert cell["metrics"]["completion"]["n"] == 2
    # The bridge timed every call into the system; the scripted expert does not time its motion.
    rt = cell["runtime"]
    assert rt["inference"]["n"] == 2 and rt["inference"]["mean_s"] > 0
    assert rt["wall"]["mean_s"] > rt["inference"]["mean_s"]
    assert rt["motion"]["mean_s"] is None and rt["motion"]["unavailable"]

    seen = assert_self_contained_page(out / "report.html", tmp_path, min_images=3)
    assert "tested_system=scripted_expert" in seen["text"]
