"""The imperfect weighing reference systems (tasks/weighing/systems/imperfect.py) through
the graph: each makes its one mistake, and the records show what the protocol says
(paper 5.3: a correct target followed by a dropped object gets choice credit and an
execution failure; 4.2 and the weighing contract: a grasp of the next standard while
the previous placement is unconfirmed is premature advancement; 7.2: a documented
error resolved before valid completion is a recovered completion). The replay audit
re-scores each recorded episode and agrees."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from labference_ros.cell.description import weighing_cell
from labference_ros.mujoco_cell.panda_model import HOME_ARM_Q
from labference_ros.skills.motion import PickPlacePlanner
from labference_ros.tasks.weighing.instances import generate, write_instance_list
from labference_ros.tasks.weighing.systems.imperfect import _drop_after_lift

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")

# system -> (instance, categories counted, completion class, first choice correct, execution of that choice)
CASES = {
    # basic-0-0000 needs std_10: dropped once over the table, then placed.
    "dropping_expert": (generate("basic", 1, 0, 0, 0)[0],
                        {"execution_failure": 1, "recovery": 1}, "recovered", True, "failed"),
    # basic-0-0000: std_100 lifted and set back first, then std_10.
    "wrong_first_expert": (generate("basic", 1, 0, 0, 0)[0],
                           {"incorrect_choice": 1, "execution_failure": 1, "recovery": 1}, "recovered", False,
                           "failed"),
    # extended-0-0005 adds std_100 and removes std_20 from beside it on the pan.
    "hurried_expert": (generate("extended", 6, 0, 0, 0)[5],
                       {"premature_advancement": 1, "recovery": 1}, "recovered", True, "confirmed"),
}


def test_the_drop_opens_the_fingers_a_little_way_into_the_lift():
    planner = PickPlacePlanner()
    plan = planner.plan_pick_place(HOME_ARM_Q, weighing_cell().objects["std_10"], (0.45, -0.2, 0.015), (0.5, 0.2), 0.065)
    dropped = _drop_after_lift(plan)
    labels = [label for _, label in dropped.labels]
    assert labels[-2:] == ["lift", "drop"] and "transfer" not in labels
    grasp, opened = dropped.gripper_events[-2:]
    assert grasp.grasp and not opened.grasp and opened.width == plan.gripper_events[0].width
    assert opened.t == dict((label, t) for t, label in dropped.labels)["drop"]
    # The standard falls from a few centimetres, not the whole approach height.
    lift_start = int(round(dict((label, t) for t, label in plan.labels)["lift"] / plan.dt))
    z_grasp = planner.tcp_pose(plan.arm_q[lift_start])[0][2]
    z_drop = planner.tcp_pose(dropped.arm_q[-1])[0][2]
    assert 0.01 < z_drop - z_grasp < 0.05, z_drop - z_grasp
    # The hand holds still while it falls.
    assert (dropped.arm_q[-1] == dropped.arm_q[int(round(opened.t / plan.dt))]).all()


def _events(episode: pathlib.Path) -> list[dict]:
    records = [json.loads(line) for line in (episode / "events.jsonl").read_text().splitlines() if line.strip()]
    return [r for r in records if r.get("record") == "event"]


@pytest.mark.slow
def test_imperfect_systems_leave_the_records_the_protocol_prescribes(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "ROS_DOMAIN_ID"}  # each launch claims a free domain
    for system, (instance, categories, completion, first_correct, execution) in CASES.items():
        listing = tmp_path / f"{system}.json"
        write_instance_list(listing, [instance])
        out = tmp_path / system
        proc = subprocess.run([LABFERENCE, "launch", "weighing_sim.launch.py", f"system:={system}",
                               f"condition:={instance.condition}", f"instances:={listing}", "record:=true",
                               f"output_dir:={out}"], env=env, capture_output=True, text=True, timeout=1500)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        (episode,) = sorted((out / "episodes").iterdir())
        scores = json.loads((episode / "scores.json").read_text())
        counted = {k: v for k, v in scores["categories"].items() if v}
        assert counted == categories, (system, counted)
        assert scores["completion_class"] == completion and scores["valid_complete"] is True, system
        assert scores["first_choice_correct"] is first_correct, system
        first = next(o for o in scores["opportunity_records"] if o["first_choice"] is not None)
        assert first["execution"] == execution, (system, first)
        events = _events(episode)
        if system == "dropping_expert":
            # The choice was scored correct, then the standard came to rest on the table.
            failure = next(e for e in events if e["category"] == "execution_failure")
            assert failure["object"] == instance.goal_set[0] and failure["detail"]["location"] == "table"
        if system == "hurried_expert":
            (early,) = [e for e in events if e["category"] == "premature_advancement"]
            assert early["detail"]["reason"] == "previous_placement_unconfirmed" and early["object"] == "std_20"
        recovery = next(e for e in events if e["category"] == "recovery")
        assert recovery["detail"]["resolved_errors"] == sum(v for k, v in categories.items() if k != "recovery")
        audit = subprocess.run([LABFERENCE, "audit", str(out)], capture_output=True, text=True, timeout=600)
        assert audit.returncode == 0, (system, audit.stdout[-3000:] + audit.stderr[-2000:])
        assert "agree" in audit.stdout, audit.stdout
