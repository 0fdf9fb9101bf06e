"""lab_sim's reset asked again (the runner's resend after a lost reply) before anything
moved the scene is answered with the first answer, not done again; once an advance, a
command or a restore moved it, a reset is done again (nodes/repeated_reset.py). The
first advance of each timeline waits for lab_sim's observed writers to match the readers
its graph shows (nodes/matching.py: a frame written once must reach them)."""
from __future__ import annotations

import json
import pathlib
import sys
from types import SimpleNamespace

import pytest

from labference_ros.nodes.repeated_reset import RepeatedReset
from labference_ros.rosenv import loopback_environ
from ros_domains import own_domain
from rosproc import Proc

PROBE = pathlib.Path(__file__).resolve().parents[1] / "peers" / "repeated_reset_probe.py"


def _request(episode_id="0000_a", instance_json="{}"):
    return SimpleNamespace(episode_id=episode_id, instance_json=instance_json)


def _answer(success=True, sim_time=0.0):
    return SimpleNamespace(success=success, message="loaded a", layout_hash="l", scene_hash="s", sim_time=sim_time)


def test_only_the_same_episodes_request_before_anything_moved_is_answered_again():
    resets = RepeatedReset()
    resets.answered(_request(), _answer(sim_time=0.0))
    again = _answer(sim_time=9.0)
    assert resets.repeat(_request(), again) and again.sim_time == 0.0 and again.scene_hash == "s"
    assert not resets.repeat(_request(episode_id="0001_a"), _answer())
    assert not resets.repeat(_request(instance_json='{"x": 1}'), _answer())
    resets.moved()
    assert not resets.repeat(_request(), _answer())


def test_a_failed_reset_and_a_reset_without_an_episode_are_never_answered_again():
    resets = RepeatedReset()
    resets.answered(_request(), _answer(success=False))
    assert not resets.repeat(_request(), _answer())
    resets.answered(_request(episode_id=""), _answer())  # simulation_interfaces' ResetSimulation
    assert not resets.repeat(_request(episode_id=""), _answer())


@pytest.mark.slow
def test_lab_sim_answers_a_repeated_reset_and_does_a_reset_after_an_advance():
    with own_domain() as domain:
        env = loopback_environ()
        env["ROS_DOMAIN_ID"] = domain
        sim = Proc([sys.executable, "-m", "labference_ros.nodes.lab_sim", "--ros-args", "-p", "match_timeout_s:=1.0"],
                   env=env)
        probe = Proc([sys.executable, str(PROBE)], env=env)
        try:
            lines = probe.wait_for("RESULT", timeout=180)
        finally:
            probe.stop()
            sim.stop()
    sim.wait_for("\0", timeout=2)  # everything it printed
    assert lines, (probe.seen[-20:], sim.seen[-20:])
    out = json.loads(lines[0].removeprefix("RESULT "))
    assert out["first"]["success"] and out["first"]["tares"] == 1, out
    assert out["repeated"] == out["first"], out  # the same answer, and no second tare: not done again
    assert any("asked again before anything moved" in line for line in sim.seen), sim.seen[-20:]
    assert out["advanced_to"] == pytest.approx(0.2)
    # Moved by the advance: done again, so sim time starts again from the reset.
    assert out["after_advance"]["success"] and out["after_advance"]["sim_time"] == 0.0
    assert out["after_advance"]["tares"] == 2
    assert out["advanced_again_to"] == pytest.approx(0.1) and out["advanced_further_to"] == pytest.approx(0.2)
    # The first advance of each timeline (not the repeated reset's, not the second advance of
    # one) waited for its writers to match every reader its graph shows, then said which it gave up on.
    gave_up = [line for line in sim.seen if "publishing before matching the subscriptions of" in line]
    assert len(gave_up) == 2 and all(line.endswith("/cameras/front/image_raw") for line in gave_up), gave_up
