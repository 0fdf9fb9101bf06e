"""lab_sim + balance + referee as separate processes: a sync advance waits for a
command that arrives after the request. (The scored episodes driven through these
interfaces, correct, dropped and wrong, are recorded and audited in
test/recording/test_recording_graph.py.)"""
from __future__ import annotations

import pathlib
import sys

import pytest

from labference_ros.rosenv import loopback_environ
from ros_domains import own_domain
from rosproc import Proc

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def graph(tmp_path):
    with own_domain() as domain:
        env = loopback_environ()
        env["ROS_DOMAIN_ID"] = domain
        procs = [Proc([sys.executable, "-m", f"labference_ros.nodes.{name}"], env=env)
                 for name in ("lab_sim", "balance", "referee")]
        yield env
        for p in procs:
            assert p.popen.poll() is None, f"a node died: {p.seen[-20:]}"
            p.stop()


def test_advance_waits_for_a_command_that_arrives_after_the_request(graph):
    """The boundary's command may reach lab_sim after the advance request; the
    advance must wait for it (command subscriptions keep running) and succeed."""
    probe = Proc([sys.executable, str(REPO / "test" / "peers" / "advance_barrier.py")], env=graph)
    lines = probe.wait_for("RESULT", timeout=120)
    probe.stop()
    assert lines and lines[0].startswith("RESULT True"), probe.seen[-20:]
