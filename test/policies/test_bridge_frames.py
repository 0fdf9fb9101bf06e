"""In realtime mode the policy bridge takes the newest frames it has. Where the scene
changes on its own at a camera tick (placement recall's occluder and rack transition),
lab_sim publishes that tick's frames just after its joint state, so an observation taken
in between would carry the frame from before the change: the bridge waits for the tick's
frames there. A task without such an environment (weighing) keeps taking the newest."""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

from labference_ros.rosenv import loopback_environ

PROBE = pathlib.Path(__file__).resolve().parents[1] / "peers" / "bridge_frame_probe.py"


def probe(task: str, out: pathlib.Path) -> dict:
    res = subprocess.run([sys.executable, str(PROBE), task, str(out)], capture_output=True, text=True, timeout=300,
                         env=loopback_environ(), cwd=PROBE.parent)
    lines = [s for s in res.stdout.splitlines() if s.startswith("RESULT ")]
    assert res.returncode == 0 and lines, res.stdout[-2000:] + res.stderr[-2000:]
    return json.loads(lines[-1][len("RESULT "):])


def test_realtime_waits_for_the_frames_of_a_changing_scenes_tick(tmp_path):
    seen = probe("placement_recall", tmp_path)
    assert seen["early"] is None  # the joint state of tick 10.4 with frames of 10.3: no observation
    assert seen["late"] == {"front": 10.4, "wrist": 10.4}


def test_realtime_takes_the_newest_frames_where_the_scene_changes_only_by_the_robot(tmp_path):
    seen = probe("feedback_weighing", tmp_path)
    assert set(seen["early"].values()) == {10.3} and set(seen["late"].values()) == {10.4}
