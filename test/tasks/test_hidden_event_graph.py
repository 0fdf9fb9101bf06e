"""The hidden-event condition of weighing and centrifuge loading through the graph
(SciHorizon-eLab 4, 5.2.2): the ready lamp lights at each instance's hidden trigger
time (lab_sim's environment transition, announced in the world state the bag
records). The scripted expert, which waits until a camera shows the lamp lit (the
balance's display, the front view of the centrifuge), completes at three different
trigger times with no premature interaction and a response after the event; the
impatient expert, which ignores the lamp, is recorded with premature interactions.
The replay audit re-scores every episode and agrees, and the report gives the
coordination metrics apart from completion."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from labference_ros.tasks import family

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")
LAUNCH_FILES = {"feedback_weighing": "weighing_sim.launch.py", "centrifuge_loading": "centrifuge_sim.launch.py"}


def _launch(tmp_path: pathlib.Path, task: str, system: str, instances) -> pathlib.Path:
    env = {k: v for k, v in os.environ.items() if k != "ROS_DOMAIN_ID"}  # each launch claims a free domain
    listing = tmp_path / f"{system}.json"
    family(task).write_instances(listing, instances)
    out = tmp_path / system
    proc = subprocess.run([LABFERENCE, "launch", LAUNCH_FILES[task], f"system:={system}",
                           "condition:=hidden_event", f"instances:={listing}", "record:=true",
                           f"output_dir:={out}"], env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    audit = subprocess.run([LABFERENCE, "audit", str(out)], capture_output=True, text=True, timeout=900)
    assert audit.returncode == 0, (system, audit.stdout[-3000:] + audit.stderr[-2000:])
    return out


def _episodes(out: pathlib.Path) -> list[tuple[dict, list[dict]]]:
    found = []
    for episode in sorted((out / "episodes").iterdir()):
        scores = json.loads((episode / "scores.json").read_text())
        records = [json.loads(line) for line in (episode / "events.jsonl").read_text().splitlines() if line.strip()]
        run = json.loads((episode / "run.json").read_text())
        assert run["observation"]["environment"]["external_event"] == "ready_lamp"  # declared in the record
        found.append((scores, [r for r in records if r.get("record") == "event"]))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(LAUNCH_FILES))
def test_waiting_and_impatient_systems_in_the_hidden_event_condition(tmp_path, task):
    instances = family(task).generate("hidden_event", 3, 0, 0, 0)  # lamps at 10.9, 9.0 and 6.6 s
    triggers = [i.external_event["trigger_t"] for i in instances]
    assert len(set(triggers)) == 3

    waiting = _launch(tmp_path, task, "scripted_expert", instances)
    for (scores, events), trigger in zip(_episodes(waiting), triggers):
        e = scores["external_event"]
        assert e["trigger_t"] == trigger and e["reached"] and abs(e["t"] - trigger) < 1e-6, e
        assert e["premature_interactions"] == 0 and not e["premature"] and e["completed"], e
        assert not [ev for ev in events if ev["category"] == "premature_interaction"]
        # Nothing chosen before the lamp; the first choice after it is the correct one.
        assert all(ev["t"] >= trigger for ev in events if ev["category"] in ("choice", "grasp"))
        assert e["response"]["correct"] is True and 0 < e["response_latency_s"] < 20, e
        assert scores["completion_class"] == "clean" and scores["valid_complete"] is True

    impatient = _launch(tmp_path, task, "impatient_expert", instances[2:])  # the earliest lamp
    (scores, events), = _episodes(impatient)
    e = scores["external_event"]
    premature = [ev for ev in events if ev["category"] == "premature_interaction"]
    assert e["reached"] and e["premature"] and e["premature_interactions"] == len(premature) >= 1, e
    assert all(ev["t"] < triggers[2] for ev in premature) and min(triggers) == triggers[2]
    assert scores["categories"]["premature_interaction"] == len(premature)
    assert scores["completion_class"] != "clean"

    report = subprocess.run([LABFERENCE, "report", str(waiting), str(impatient), "--out", str(tmp_path / "report"),
                             "--no-plots"], capture_output=True, text=True, timeout=600)
    assert report.returncode == 0, report.stdout[-3000:] + report.stderr[-2000:]
    rep = json.loads((tmp_path / "report" / "report.json").read_text())
    cells = {c["cell"]["tested_system"]: c for c in rep["cells"]}
    ok, early = cells["scripted_expert"]["coordination"], cells["impatient_expert"]["coordination"]
    assert ok["reached"] == 3 and ok["premature_violation"]["k"] == 0 and ok["completion"]["k"] == 3
    assert ok["response"]["n"] == 3 and ok["response"]["mean_latency_s"] > 0
    assert early["reached"] == 1 and early["premature_violation"]["k"] == 1
    assert "hidden event" in report.stdout and "premature violation (PVR)" in report.stdout
    assert "hidden event (coordination)" in (tmp_path / "report" / "report.html").read_text()
