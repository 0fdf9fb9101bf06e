"""The world_estimator node between a real cell's sensor topics and the referee's
inputs, driven by a probe that plays the sensors (test/peers/estimator_probe.py)."""
from __future__ import annotations

import json
import pathlib
import sys

from rosproc import Proc

PROBE = pathlib.Path(__file__).resolve().parents[1] / "peers" / "estimator_probe.py"


def _probe_estimator(estimator_args=(), probe_args=()) -> dict:
    """The probe's RESULT against a world_estimator started with estimator_args."""
    estimator = Proc([sys.executable, "-m", "labference_ros.nodes.world_estimator", *estimator_args])
    probe = None
    try:
        probe = Proc([sys.executable, str(PROBE), *probe_args])
        lines = probe.wait_for("RESULT", timeout=120)
        assert lines, probe.seen + estimator.seen
        return json.loads(lines[0][len("RESULT "):])
    finally:
        if probe is not None:
            probe.stop()
        estimator.stop()


def test_scene_check_and_sensor_only_measurements():
    result = _probe_estimator()
    # The operator's set-up: refused until every marker is seen where the instance puts it.
    assert not result["before_markers"]["success"]
    assert "std_10: marker not seen" in result["before_markers"]["message"]
    assert result["set_up"] == {"success": True, "message": "scene matches the instance's start"}
    assert not result["moved"]["success"]
    assert "std_10: at (" in result["moved"]["message"]
    assert "std_20" not in result["moved"]["message"]
    # Every frame carries every object: the sample on the pan, the standards on the table
    # (the hand is open and away).
    assert len(result["worlds"]) >= 10
    assert all(sorted(w) == result["objects"] for w in result["worlds"])
    expected = {name: ["pan"] if name == "sample" else ["table"] for name in result["objects"]}
    assert all(w == expected for w in result["worlds"]), result["worlds"][:2]
    assert result["checked"] and all(valid and reason == "" for valid, reason in result["checked"])
    worlds_stamps, reading_stamps = result["stamps"]
    assert worlds_stamps == reading_stamps  # one world state per checked reading, at its stamp
    # A stable reading no tracked standard explains is invalid, and says why.
    assert result["unexplained"], result
    assert all(not valid and reason.startswith("estimator: reading changed by +17.0 g")
               for valid, reason in result["unexplained"]), result["unexplained"]
    # A silent balance is measured too: one invalid frame per timeout, one reason.
    assert 2 <= len(result["silent"]) <= 4, result["silent"]
    assert all(r == [False, "world_estimator: no balance reading for over 0.5 s"] for r in result["silent"])


def test_the_scene_check_senses_the_balance_by_its_marker():
    """balance_marker:=true: the scene check refuses until the balance's marker is seen within 1 cm of
    where the instance puts the balance, and says how far off it is."""
    result = _probe_estimator(("--ros-args", "-p", "balance_marker:=true"), ("balance",))
    assert not result["unmarked"]["success"]
    assert "balance: marker not seen" in result["unmarked"]["message"], result
    assert not result["off"]["success"]
    assert "balance: its marker puts the pan at (" in result["off"]["message"]
    assert "30 mm off (tolerance 10 mm)" in result["off"]["message"], result
    assert "std_" not in result["off"]["message"]  # the objects stand where the instance puts them
    assert result["near"] == {"success": True, "message": "scene matches the instance's start"}


def test_a_reading_is_paired_with_the_arm_of_its_own_time_when_the_joint_states_ran_ahead():
    """A reader that fell behind holds a second of joint states when the reading comes: the
    frame carries the fingers stamped at the reading's time, not the newest sample."""
    result = _probe_estimator(probe_args=("lag",))
    assert result["set_up"]["success"], result
    assert len(result["widths"]) == 1, result
    assert abs(result["widths"][0] - 0.04) < 1e-9, result  # 20 mm + 25 x 0.8 mm; the newest was 60 mm
