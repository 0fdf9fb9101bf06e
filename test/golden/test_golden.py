"""Golden weighing records captured before the task-module reorganisation
(test/golden/capture.py, on the pre-change code): the new code must give
identical records for the same inputs and identical scores for the same seeds."""
from __future__ import annotations

import gzip
import json
import pathlib
import subprocess
import sys

import pytest

from labference_ros.core.input_merge import Delivery
from labference_ros.core.measurements import BalanceMeasurement, ObjectMeasurement, WorldMeasurement
from labference_ros.recording.replay import BagInputs, rebuild
from labference_ros.tasks import family

HERE = pathlib.Path(__file__).resolve().parent / "weighing"
EPISODES = sorted(HERE.glob("*.json.gz"))
LAUNCHES = json.loads((HERE / "launches.json").read_text())
VOLATILE = ("wall_time_s", "written_at")


def _balance(d: dict | None) -> BalanceMeasurement | None:
    return None if d is None else BalanceMeasurement(**d)


def _world(d: dict) -> WorldMeasurement:
    objects = {name: ObjectMeasurement(**{**o, "position": tuple(o["position"]),
                                          "orientation": tuple(o["orientation"]),
                                          "contacts": tuple(o["contacts"])})
               for name, o in d["objects"].items()}
    return WorldMeasurement(t=d["t"], objects=objects, gripper_width=d["gripper_width"],
                            gripper_closing=d["gripper_closing"], pan_contacts=tuple(d["pan_contacts"]),
                            balance=_balance(d["balance"]))


def _canonical(records) -> str:
    return json.dumps(records, sort_keys=True)


def test_golden_set_is_present():
    assert len(EPISODES) >= 5
    assert set(LAUNCHES) >= {"expert_basic", "expert_extended", "preference_basic", "reader_basic"}


@pytest.mark.parametrize("path", EPISODES, ids=lambda p: p.name.removesuffix(".json.gz"))
def test_recorded_inputs_give_identical_records(path):
    with gzip.open(path, "rt") as f:
        golden = json.load(f)
    weighing = family("feedback_weighing")
    inputs = BagInputs(worlds=[_world(w) for w in golden["worlds"]],
                       readings=[(t, BalanceMeasurement(**r)) for t, r in golden["readings"]],
                       deliveries=[Delivery(**d) for d in golden["deliveries"]])
    instance = weighing.instance_from_json(golden["instance_json"])
    records = rebuild(weighing, inputs, instance, golden["episode_id"], tuple(golden["finish"]),
                      golden["reports"], deadline_s=golden["deadline_s"])
    assert len(records) == len(golden["expected"])
    for i, (got, want) in enumerate(zip(records, golden["expected"])):
        assert _canonical(got) == _canonical(want), f"record {i} differs"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LAUNCHES))
def test_same_launch_seeds_give_identical_scores(name, tmp_path):
    launch = LAUNCHES[name]
    labference = pathlib.Path(sys.executable).parent / "labference"
    out = tmp_path / name
    proc = subprocess.run([str(labference), "launch", "weighing_sim.launch.py", *launch["args"], "record:=false",
                           f"output_dir:={out}"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for episode, want in launch["scores"].items():
        got = json.loads((out / "episodes" / episode / "scores.json").read_text())
        got = {k: v for k, v in got.items() if k not in VOLATILE}
        assert _canonical(got) == _canonical(want), f"{name}/{episode}: scores.json differs from the golden one"
