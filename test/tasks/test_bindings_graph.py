"""Held-out object bindings through the graph: the scripted expert runs each family's
held-out condition and the condition it rebinds (basic; placement recall's basic-same)
on the same draws (the held-out instances are its twins), the replay audit re-scores
the held-out episodes and agrees, and the report shows the two bindings side by side
with k/N and intervals and pairs them with --compare."""
from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from labference_ros.tasks import family

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")
# task -> (graph, held-out condition, its binding, the condition it rebinds)
HELDOUT = {"feedback_weighing": ("weighing_sim.launch.py", "heldout_blocks", "blocks", "basic"),
           "centrifuge_loading": ("centrifuge_sim.launch.py", "heldout_tubes", "slim_tubes", "basic"),
           "placement_recall": ("placement_recall_sim.launch.py", "heldout_tubes", "slim_tubes", "basic-same")}
N = 2


def _launch(tmp_path: pathlib.Path, task: str, condition: str, record: bool) -> pathlib.Path:
    env = {k: v for k, v in os.environ.items() if k != "ROS_DOMAIN_ID"}  # each launch claims a free domain
    listing = tmp_path / f"{condition}.json"
    family(task).write_instances(listing, family(task).generate(condition, N, 0, 0, 0))
    out = tmp_path / condition
    proc = subprocess.run([LABFERENCE, "launch", HELDOUT[task][0], "system:=scripted_expert",
                           f"condition:={condition}", f"instances:={listing}", f"record:={str(record).lower()}",
                           f"output_dir:={out}"], env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(HELDOUT))
def test_two_bindings_of_one_family_side_by_side(tmp_path, task):
    _, condition, binding, rebound = HELDOUT[task]
    default = _launch(tmp_path, task, rebound, record=False)
    heldout = _launch(tmp_path, task, condition, record=True)
    for episode in sorted((heldout / "episodes").iterdir()):
        run = json.loads((episode / "run.json").read_text())
        assert run["instance"]["binding"] == binding and run["task"]["contract"]["binding"] == binding
        assert run["instance"]["binding_twin"].startswith(f"{rebound}-")
        assert json.loads((episode / "scores.json").read_text())["completion_class"] == "clean"
    audit = subprocess.run([LABFERENCE, "audit", str(heldout)], capture_output=True, text=True, timeout=900)
    assert audit.returncode == 0, audit.stdout[-3000:] + audit.stderr[-2000:]

    report = subprocess.run([LABFERENCE, "report", str(default), str(heldout), "--out", str(tmp_path / "report"),
                             "--no-plots", "--compare", f"binding={binding}", "--reference", f"task_condition={rebound}"],
                            capture_output=True, text=True, timeout=600)
    assert report.returncode == 0, report.stdout[-3000:] + report.stderr[-2000:]
    table = report.stdout.split("== bindings side by side:", 1)[1].split("\n\n", 1)[0].splitlines()
    assert f"task={task}" in table[0] and "tested_system=scripted_expert" in table[0]
    rows = {line.split()[0]: line for line in table[2:]}
    assert set(rows) == {"default", binding}
    for row in rows.values():
        assert re.search(rf"100\.0% {N}/{N} \[\d+\.\d%, 100\.0%\]W", row), row
    (comparison,) = json.loads((tmp_path / "report" / "report.json").read_text())["comparisons"]
    assert comparison["paired_units"] == N
