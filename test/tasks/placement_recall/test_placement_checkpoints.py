"""Placement recall's checkpoint population (paper 4.3 and 6.1): the target placed by the
reference planner in every hole under every rack movement, verified at the handoff
before the occlusion; every system continues from the same placement history, the
occluded transition runs in its branch, and the retrieval is scored against the hole
the target was placed in. `labference diagnose-oracle` writes and runs it (base
branches here; its Oracle sites' continuations are in test_placement_oracle_continuations.py)
and `labference report` reads the branches' records."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import replace

from labference_ros.core.operations import insert
from labference_ros.oracle.checkpoints import CheckpointSpec, write_population
from labference_ros.tasks.placement_recall.instances import (
    LABELS,
    TARGET,
    PlacementInstance,
    checkpoint_starts,
    generate,
)
from labference_ros.tasks.placement_recall.rack import ROWS, parse_label

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")


def test_the_population_places_the_target_in_every_hole_under_every_movement():
    basic = checkpoint_starts("basic", "same", 0, 0)
    assert sorted(hole for _inst, hole in basic) == sorted(LABELS)  # a fixed denominator of 12
    extended = checkpoint_starts("extended", "distinct", 3, 3)
    assert Counter((inst.movement, hole) for inst, hole in extended) == \
        {(m, h): 1 for m in ("none", "rotate_180") for h in LABELS}
    for inst, hole in extended:
        row, col = parse_label(hole)
        neighbours = {f"{ROWS[r]}{col + 1}" for r in (row - 1, row + 1) if 0 <= r < len(ROWS)}
        assert len(set(inst.distractors.values())) == 3
        assert not ({hole} | neighbours) & set(inst.distractors.values()), (hole, inst.distractors)
    colours = Counter((inst.movement, inst.cap_colours[TARGET]) for inst, _ in extended)
    assert len(set(colours.values())) == 1  # the target's colour balanced against the movement ...
    rows = Counter((inst.movement, inst.cap_colours[TARGET], hole[0]) for inst, hole in extended)
    assert set(rows.values()) == {1} and len(rows) == 2 * 4 * 3  # ... and against the row
    for movement in ("none", "rotate_180"):  # and no column holds one colour only
        for column in "1234":
            assert len({inst.cap_colours[TARGET] for inst, hole in extended
                        if inst.movement == movement and hole[1] == column}) == 3
    assert len({inst.instance_id for inst, _ in extended}) == 24
    two = checkpoint_starts("extended", "distinct", 3, 3, blocks=2)
    assert two[:24] == extended  # a second block extends the first, never redraws it
    assert len({inst.instance_id for inst, _ in two}) == 48


def test_an_episodes_instance_reads_as_before_and_a_handoff_keeps_its_hole():
    inst = generate("extended", "same", 1, 0, 0, 0)[0]
    assert "placed_hole" not in json.loads(inst.to_json())
    assert PlacementInstance.from_json(replace(inst, placed_hole="B2").to_json()).placed_hole == "B2"


def diagnose(population, system: str, records) -> str:
    env = {**os.environ, "MUJOCO_GL": "egl"}
    proc = subprocess.run([LABFERENCE, "diagnose-oracle", str(population), "--system", system, "--records",
                           str(records)], capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def branches(records, system: str) -> dict:
    """checkpoint id -> (the hole its prefix placed the target in, the branch's scores)."""
    out = {}
    for episode in sorted((records / system / "base" / "episodes").iterdir()):
        run = json.loads((episode / "run.json").read_text())
        out[run["checkpoint"]["checkpoint_id"]] = (run["checkpoint"]["prefix"][0]["destination"],
                                                   json.loads((episode / "scores.json").read_text()))
    return out


def test_from_common_placements_memory_follows_the_label_and_world_position_fails_exactly_where_the_rack_moved(
        tmp_path):
    # Three extended-same starts: the target placed in A2 and in C3 with the rack turned half
    # a turn after the handoff, and in B4 with the rack left where it stood.
    starts = [(inst, hole) for inst, hole in checkpoint_starts("extended", "same", 0, 0)
              if (inst.movement, hole) in (("rotate_180", "A2"), ("rotate_180", "C3"), ("none", "B4"))]
    population = tmp_path / "pop.jsonl"
    write_population(population, [CheckpointSpec(f"{inst.instance_id}:p1", inst, (insert(TARGET, hole),))
                                  for inst, hole in starts])
    assert "3/3 checkpoints verified" in diagnose(population, "label_memory_pixels", tmp_path / "memory")
    diagnose(population, "world_position", tmp_path / "world")
    memory = branches(tmp_path / "memory", "label_memory_pixels")
    world = branches(tmp_path / "world", "world_position")
    assert sorted(hole for hole, _ in memory.values()) == ["A2", "B4", "C3"] and world.keys() == memory.keys()
    for checkpoint, (hole, s) in memory.items():
        (transition,) = s["environment_transitions"]
        assert transition["valid"] is True
        # The rack and every tube it carried were rebuilt: each is its second generation.
        assert transition["object_generations"] == {"rack": 2, TARGET: 2, "tube_d1": 2, "tube_d2": 2, "tube_d3": 2}
        assert s["placement"]["placed_hole"] == s["retrieval"]["reference_hole"] == hole, s["placement"]
        assert s["retrieval"]["correct"] is True and s["physically_complete"], s["retrieval"]
        assert (s["commitment"]["correct"], s["commitment"]["agreement"]) == (1, 1.0)  # named and reached there
        w = world[checkpoint][1]
        if hole == "B4":  # the rack stayed: its old place is the right one
            assert w["retrieval"]["correct"] is True and w["physically_complete"], w["retrieval"]
            continue
        # The half turn brought another hole to the placed hole's old world position: it reaches there.
        assert w["retrieval"]["chosen_hole"] == w["retrieval"]["old_world_position_hole"] != hole, w["retrieval"]
        assert w["retrieval"]["correct"] is False
        # Its symbolic commitment names the right label (the one it placed into): the paper's
        # behavioural error, apart from reporting a wrong local label.
        assert (w["commitment"]["correct"], w["commitment"]["agreement"]) == (1, 0.0), w["commitment"]
    run = json.loads(next((tmp_path / "memory").rglob("run.json")).read_text())
    assert run["intervention"]["protocol"] == "checkpoint_continuation"
    assert run["observation"]["environment"]["occluder"] == "blanked_frames"
    assert run["observation"]["history_protocol"].startswith("online_once")

    report = subprocess.run([LABFERENCE, "report", str(tmp_path / "memory")], capture_output=True, text=True,
                            timeout=300)
    assert report.returncode == 0, report.stdout[-2000:] + report.stderr[-2000:]
    assert "retrieval      reached 3/3, chosen 3/3, correct 3/3" in report.stdout
    assert "intervention_protocol=checkpoint_continuation" in report.stdout
