"""Captures golden weighing records: referee inputs read from recorded bags with
the outputs the referee produced for them, and the scores.json of launches
with fixed seeds. Run before a refactor; test_golden.py replays them after.

    .venv/bin/python test/golden/capture.py WORK_DIR

runs every launch of LAUNCHES (record:=true) under WORK_DIR and writes
test/golden/weighing/: one <launch>__<episode>.json.gz per episode and
launches.json (arguments and scores.json per episode).
"""
from __future__ import annotations

import dataclasses
import gzip
import json
import pathlib
import subprocess
import sys

from labference_ros.core.records import episode_deadline, read_jsonl
from labference_ros.recording import replay
from labference_ros.recording.audit import AuditResult, _finish
from labference_ros.recording.bag_reader import EpisodeBagReader
from labference_ros.tasks import family

HERE = pathlib.Path(__file__).resolve().parent
# scores.json fields that depend on the machine, not on the seeds.
VOLATILE = ("wall_time_s", "written_at")
LAUNCHES = {
    "expert_basic": ["episodes:=2", "system:=scripted_expert", "condition:=basic", "seed:=0"],
    "expert_extended": ["episodes:=1", "system:=scripted_expert", "condition:=extended", "seed:=3"],
    "preference_basic": ["episodes:=1", "system:=fixed_preference", "condition:=basic", "seed:=5"],
    "reader_basic": ["episodes:=1", "system:=display_reader", "condition:=basic", "seed:=7"],
}


def capture_episode(episode_dir: pathlib.Path) -> dict:
    reader = EpisodeBagReader(episode_dir / "bag")
    run = json.loads((episode_dir / "run.json").read_text())
    custom = reader.custom
    episode_id = custom.get("episode_id") or run["episode_id"]
    weighing = family("feedback_weighing")
    instance = weighing.instance_from_json(custom.get("instance_json") or json.dumps(run["instance"]))
    inputs = replay.read_inputs(reader, episode_id)
    events = read_jsonl(episode_dir / "events.jsonl")
    finish = _finish(custom, events, inputs, AuditResult(bag=episode_dir))
    reports = [r for r in read_jsonl(episode_dir / "observations.jsonl") if r.get("record") == "report"]
    deadline = episode_deadline(run)
    expected = replay.rebuild(weighing, inputs, instance, episode_id, finish, reports, deadline_s=deadline)
    return {"episode_id": episode_id, "instance_json": instance.to_json(), "deadline_s": deadline,
            "finish": list(finish), "reports": reports,
            "worlds": [dataclasses.asdict(w) for w in inputs.worlds],
            "readings": [[t, dataclasses.asdict(r)] for t, r in inputs.readings],
            "deliveries": [dataclasses.asdict(d) for d in inputs.deliveries],
            "expected": expected}


def stable_scores(scores: dict) -> dict:
    return {k: v for k, v in scores.items() if k not in VOLATILE}


def main(work_dir: str) -> None:
    out_dir = HERE / "weighing"
    out_dir.mkdir(exist_ok=True)
    launcher = pathlib.Path(sys.executable).parent / "labference"
    launches = {}
    for name, args in LAUNCHES.items():
        run_dir = pathlib.Path(work_dir) / name
        subprocess.run([str(launcher), "launch", "weighing_sim.launch.py", *args, "record:=true",
                        f"output_dir:={run_dir}"], check=True)
        scores = {}
        for ep in sorted(p for p in (run_dir / "episodes").iterdir() if p.is_dir()):
            with gzip.open(out_dir / f"{name}__{ep.name}.json.gz", "wt") as f:
                json.dump(capture_episode(ep), f, sort_keys=True)
            scores[ep.name] = stable_scores(json.loads((ep / "scores.json").read_text()))
        launches[name] = {"args": args, "scores": scores}
    (out_dir / "launches.json").write_text(json.dumps(launches, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
