"""lab_sim + balance + referee as separate processes: a sync advance waits for a
command that arrives after the request. (The scored episodes driven through these
interfaces, correct, dropped and wrong, are recorded and audited in
test/recording/test_recording_graph.py.)"""
from __future__ import annotations

import json
import pathlib
import sys

import pytest

from labference_ros.rosenv import loopback_environ
from ros_domains import own_domain
from rosproc import Proc

REPO = pathlib.Path(__file__).resolve().parents[2]
COMMAND_WAIT_S = 3.0  # lab_sim's, shorter than its default for this test


@pytest.fixture
def graph(tmp_path):
    with own_domain() as domain:
        env = loopback_environ()
        env["ROS_DOMAIN_ID"] = domain
        procs = [Proc([sys.executable, "-m", f"labference_ros.nodes.{name}", *args], env=env)
                 for name, args in (("lab_sim", ["--ros-args", "-p", f"command_wait_s:={COMMAND_WAIT_S}"]),
                                    ("balance", []), ("referee", []))]
        yield env
        for p in procs:
            assert p.popen.poll() is None, f"a node died: {p.seen[-20:]}"
            p.stop()


def test_advance_waits_for_a_command_that_arrives_after_the_request(graph):
    """The boundary's command may reach lab_sim after the advance request; the
    advance must wait for it (command subscriptions keep running) and succeed. A
    command that never comes refuses the advance after command_wait_s, a command
    sent before the request is taken at once, a second advance waits while one runs
    and a third is refused, and a reset ends the waits (test/peers/advance_barrier.py).
    A command stamped at the next boundary and its advance, sent while an interval
    runs, give the physics they give when sent after it; an advance naming a boundary
    sim time has not reached is refused. An answer carries the joint state lab_sim
    published at its end, and the world state when asked for it. Three rows sent before
    one advance over their intervals give the physics of one row at a time; a command
    boundary outside the interval is refused."""
    probe = Proc([sys.executable, str(REPO / "test" / "peers" / "advance_barrier.py")], env=graph)
    results = probe.wait_for("RESULT", timeout=120, count=6)
    ahead = probe.wait_for("AHEAD", timeout=120)
    stale = probe.wait_for("STALE", timeout=60)
    answer = probe.wait_for("ANSWER", timeout=60)
    rows = probe.wait_for("ROWS", timeout=60)
    outside = probe.wait_for("OUTSIDE", timeout=60)
    probe.stop()
    assert len(results) == 6, probe.seen[-20:]
    answers = [line.split(" ", 3)[1:] for line in results]
    assert answers[0][0] == "True", results
    ok, waited, message = answers[1]
    assert ok == "False" and message == "commands for this boundary never arrived", results
    assert COMMAND_WAIT_S <= float(waited) < COMMAND_WAIT_S + 5, results
    assert answers[2][0] == "True", results
    assert answers[3][0] == "False" and answers[3][2] == "another advance is running", results
    assert float(answers[3][1]) < 1.0, results  # refused at once, not queued
    reset = "the scene was reset or restored during the advance"
    assert answers[4][0] == "False" and answers[4][2] == reset, results  # the one that waited
    assert answers[5][0] == "False" and answers[5][2] == reset, results
    assert ahead == ["AHEAD True 0.200"], probe.seen[-20:]
    assert stale == ["STALE False command_stamp 0.300 s is ahead of sim time 0.200 s"], probe.seen[-20:]
    assert answer == ["ANSWER True True True 0.200"], probe.seen[-20:]
    assert rows == ["ROWS True 0.300"], probe.seen[-20:]
    assert outside == ["OUTSIDE False a command stamp (0.400 s) lies outside the interval [0.300, 0.400) s"], \
        probe.seen[-20:]


def test_each_frame_shows_the_reading_owed_to_it_however_late_the_balance_answers(tmp_path):
    """Sync mode: the display in a frame at t shows the reading stamped t - 20 ms
    (sync_protocol.DISPLAY_LAG_S), even from a balance that answers 50 ms of wall time
    late, so the same seeds render the same frames in every run."""
    from labference_ros.sim.sync_protocol import DISPLAY_LAG_S

    sys.path.insert(0, str(REPO / "test" / "peers"))
    from display_lag_probe import value_at

    with own_domain() as domain:
        env = loopback_environ()
        env["ROS_DOMAIN_ID"] = domain
        sim = Proc([sys.executable, "-m", "labference_ros.nodes.lab_sim", "--ros-args", "-p", "image_width:=320",
                    "-p", "image_height:=240"], env=env)
        probe = Proc([sys.executable, str(REPO / "test" / "peers" / "display_lag_probe.py")], env=env)
        lines = probe.wait_for("FRAMES", timeout=180)
        probe.stop()
        assert sim.popen.poll() is None, sim.seen[-20:]
        sim.stop()
    assert lines, probe.seen[-20:]
    frames = json.loads(lines[0].removeprefix("FRAMES "))
    assert [t for t, _ in frames] == pytest.approx([0.1 * k for k in range(7)])
    assert frames[0][1] is None  # no reading is owed to the first frame: the display is blank
    for t, shown in frames[1:]:
        assert shown == value_at(round(t - DISPLAY_LAG_S, 6)), (t, shown)


def test_a_reset_ends_an_advance_waiting_for_a_reading_and_a_silent_balance_stops_the_waits():
    """A balance on the graph that never answers: the frame's wait is ended by a
    reset (the advance fails and says why, nothing of the old episode goes on), then
    times out once; lab_sim warns once and later frames no longer wait."""
    with own_domain() as domain:
        env = loopback_environ()
        env["ROS_DOMAIN_ID"] = domain
        sim = Proc([sys.executable, "-m", "labference_ros.nodes.lab_sim"], env=env)
        probe = Proc([sys.executable, str(REPO / "test" / "peers" / "display_lag_probe.py"), "silent"], env=env)
        done = probe.wait_for("SILENT_DONE", timeout=180)
        probe.stop()
        assert sim.popen.poll() is None, sim.seen[-20:]
        sim.wait_for("\0", timeout=2)  # collects what lab_sim printed
        sim.stop()
    assert done, probe.seen[-20:]
    (interrupted,) = [line for line in probe.seen if line.startswith("INTERRUPTED")]
    assert interrupted == "INTERRUPTED False the scene was reset or restored during the advance"
    assert done[0] == "SILENT_DONE True 0.60"
    warnings = [line for line in sim.seen if "no balance reading stamped" in line]
    assert len(warnings) == 1 and "frames no longer wait" in warnings[0], sim.seen[-20:]
