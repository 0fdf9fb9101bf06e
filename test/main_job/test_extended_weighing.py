"""One extended-condition episode through the real graph: the non-privileged
display_reader completes it with every identified first choice legal.

condition:=extended seed:=0 starts with std_100 on the pan and needs
std_10 + std_20 (a removal and two additions)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")

pytestmark = pytest.mark.slow


def test_display_reader_completes_an_extended_episode_through_the_graph(tmp_path):
    out = tmp_path / "extended"
    proc = subprocess.run([LABFERENCE, "launch", "weighing_sim.launch.py", f"output_dir:={out}", "seed:=0",
                           "condition:=extended", "system:=display_reader", "episodes:=1", "record:=false"],
                          capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    (attempt,) = [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]
    assert attempt["status"] == "ok"
    scores = json.loads((out / "episodes" / attempt["episode_id"] / "scores.json").read_text())
    choices = [o for o in scores["opportunity_records"] if o["first_choice"] is not None]
    assert [(o["first_choice"]["type"], o["first_choice"]["object"]) for o in choices] == [
        ("remove", "std_100"), ("add", "std_10"), ("add", "std_20")]
    assert all(o["choice_correct"] is True for o in choices)
    assert scores["identified_choices"] == scores["correct_choices"] == 3
    assert scores["valid_complete"] is True and scores["clean_complete"] is True
    assert scores["supported_standards"] == ["std_10", "std_20"]
