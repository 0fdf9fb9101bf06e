"""The operator's confirmation and records (episodes/operator.py), without ROS."""
from __future__ import annotations

import json

import pytest

from labference_ros.episodes.operator import (CONFIRMED, SCENE_REFUSED, ConfirmGate, OperatorLog, device_event,
                                              hand_event)


def test_a_confirmation_before_the_scene_matches_is_refused_and_starts_nothing():
    gate = ConfirmGate("operator")
    ok, message, eid = gate.answer("", "ana")
    assert (ok, eid) == (False, "") and "scene check has not passed" in message
    gate.ask("0000_a")
    assert not gate.is_confirmed("0000_a")  # asked, not yet confirmed
    ok, message, eid = gate.answer("0001_b", "ana")
    assert (ok, eid) == (False, "0000_a") and "0000_a is waiting, not 0001_b" in message
    ok, message, eid = gate.answer("", "ana")
    assert (ok, eid) == (True, "0000_a") and gate.is_confirmed("0000_a")
    assert gate.confirmed == {"0000_a": "ana"}
    # Confirmed once: a second confirmation is not taken for the next episode.
    assert gate.answer("", "ana")[0] is False


def test_auto_confirms_each_episode_as_its_scene_matches():
    gate = ConfirmGate("auto")
    gate.ask("0000_a")
    assert gate.is_confirmed("0000_a") and gate.waiting is None
    assert gate.confirmed == {"0000_a": "auto"}


def test_a_scene_that_changed_after_its_confirmation_waits_for_a_new_one():
    gate = ConfirmGate("operator")
    gate.ask("0000_a")
    assert gate.answer("", "ana")[0] is True
    gate.ask("0000_a")  # set up again after the re-check found it changed
    assert not gate.is_confirmed("0000_a") and gate.waiting == "0000_a"
    assert gate.answer("", "ben") == (True, "episode 0000_a confirmed: it starts now", "0000_a")
    assert gate.confirmed == {"0000_a": "ben"} and gate.waiting is None


def test_a_withdrawn_wait_takes_no_confirmation():
    gate = ConfirmGate("operator")
    gate.ask("0000_a")
    gate.withdraw()
    assert gate.answer("0000_a", "ana")[0] is False and not gate.is_confirmed("0000_a")


def test_an_unknown_mode_is_named():
    with pytest.raises(ValueError, match="confirm must be one of auto, operator, got 'always'"):
        ConfirmGate("always")


def test_the_log_keeps_each_step_with_its_wall_and_episode_times(tmp_path):
    times = iter([1_700_000_000.25, 1_700_000_003.5])
    path = tmp_path / "ep" / "operator.jsonl"
    log = OperatorLog(path, wall_clock=lambda: next(times))
    log.note(SCENE_REFUSED, 12.0, check=1, message="std_10: marker not seen")
    log.note(CONFIRMED, None, by="operator", operator="ana")
    log.close()
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows == log.entries
    assert rows[0] == {"kind": SCENE_REFUSED, "wall_time": 1_700_000_000.25, "utc": "2023-11-14T22:13:20.250+00:00",
                       "sim_time": 12.0, "check": 1, "message": "std_10: marker not seen"}
    assert rows[1]["kind"] == CONFIRMED and rows[1]["operator"] == "ana" and rows[1]["sim_time"] is None
    assert rows[1]["wall_time"] - rows[0]["wall_time"] == pytest.approx(3.25)


def test_a_log_without_a_path_keeps_entries_and_writes_nothing(tmp_path):
    log = OperatorLog(None)
    log.note(CONFIRMED, 1.0, by="auto")
    assert [e["by"] for e in log.entries] == ["auto"] and not list(tmp_path.iterdir())
    with pytest.raises(ValueError, match="unknown operator entry kind 'coffee'"):
        log.note("coffee")


def test_hand_events_name_their_episode_or_the_session():
    assert hand_event('{"episode_id": "", "action": "homing", "detail": "done"}') == (
        "", {"action": "homing", "detail": "done"})
    assert hand_event('{"episode_id": "0000_a", "action": "release"}') == ("0000_a", {"action": "release",
                                                                                       "detail": ""})
    for bad in ("not json", '{"episode_id": "x"}', "[1]"):
        with pytest.raises((ValueError, KeyError, TypeError)):
            hand_event(bad)


def test_the_arms_events_are_its_own_kind_and_the_hands_stay_hand():
    assert device_event('{"episode_id": "", "device": "arm", "action": "home", "detail": "done"}') == (
        "", "arm", {"action": "home", "detail": "done"})
    assert device_event('{"episode_id": "0000_a", "device": "arm", "action": "lift", "detail": "refused: x"}') == (
        "0000_a", "arm", {"action": "lift", "detail": "refused: x"})
    assert device_event('{"episode_id": "0000_a", "action": "release", "detail": "done"}')[1] == "hand"
    with pytest.raises(KeyError):
        device_event('{"episode_id": "", "device": "wrist", "action": "home"}')


def test_the_real_launch_homes_the_arm_unless_told_not_to():
    from labference_ros.graphs import weighing_real

    assert weighing_real.GRAPH.argument("arm_homing").default == "true"
    assert weighing_real.GRAPH.argument("arm_homing").choices == ("true", "false")
    # The same argument reaches the arm's bridge (it homes) and the runner (it waits).
    nodes = {n.name: n for n in weighing_real.NODES}
    for name in ("franka_arm_bridge", "episode_runner"):
        assert nodes[name].parameters["arm_homing"].argument == "arm_homing"


def test_the_launch_files_offer_the_runners_confirmation_modes():
    from labference_ros.graphs import weighing_real, weighing_rehearsal

    from labference_ros.episodes.operator import CONFIRM_MODES

    assert weighing_real.GRAPH.argument("confirm").choices == CONFIRM_MODES
    assert weighing_real.GRAPH.argument("confirm").default == "operator"
    assert weighing_rehearsal.GRAPH.argument("confirm").default == "auto"
