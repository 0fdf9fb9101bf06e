"""entity_tracker and sim_loader against a simulator whose first reply never comes (a
reply Fast DDS dropped before its writer matched the client): each gives that request up
and asks again, so the poses still flow and the instance is still loaded."""
from __future__ import annotations

import json
import pathlib
import sys

from labference_ros.rosenv import loopback_environ
from ros_domains import own_domain
from rosproc import Proc

PEER = pathlib.Path(__file__).resolve().parents[1] / "peers" / "silent_first_entities.py"


def test_a_lost_entity_states_reply_is_asked_again_and_the_poses_flow():
    with own_domain() as domain:
        env = loopback_environ()
        env["ROS_DOMAIN_ID"] = domain
        simulator = Proc([sys.executable, str(PEER)], env=env)
        tracker = Proc([sys.executable, "-m", "labference_ros.nodes.entity_tracker", "--ros-args", "-p", "rate:=20.0"],
                       env=env)
        try:
            poses = simulator.wait_for("POSES", count=3, timeout=60)
        finally:
            tracker.stop()
            simulator.stop()
    asked = [line for line in simulator.seen if line.startswith("ASKED")]
    assert len(poses) == 3, simulator.seen[-20:] + tracker.seen[-20:]
    assert poses[0].endswith("['sample']")
    assert len(asked) >= 4  # the first never answered, then one request per pose message


def test_a_lost_load_world_reply_is_asked_again_within_the_reset():
    """sim_loader against a simulator whose first LoadWorld reply never comes: asked again
    after 8 s, the second answer loads the instance and the reset succeeds."""
    peer = PEER.parent / "silent_first_world.py"
    with own_domain() as domain:
        env = loopback_environ()
        env["ROS_DOMAIN_ID"] = domain
        loader = Proc([sys.executable, "-m", "labference_ros.nodes.sim_loader", "--ros-args", "-p", "clock_wait_s:=0.1"],
                      env=env)
        simulator = Proc([sys.executable, str(peer)], env=env)
        try:
            lines = simulator.wait_for("RESULT", timeout=90)
            loader.wait_for("\0", timeout=0.5)  # what it said meanwhile
        finally:
            simulator.stop()
            loader.stop()
    assert lines, simulator.seen[-20:] + loader.seen[-20:]
    out = json.loads(lines[0].removeprefix("RESULT "))
    assert out["success"] and out["loads"] == 2, (out, loader.seen[-20:])
    assert any("no answer from /load_world yet; asking again" in line for line in loader.seen), loader.seen[-20:]
