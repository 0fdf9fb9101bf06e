"""The discovery scope a real rig's launch widens to (discovery:=subnet, static_peers):
only the launcher's variables widen it, and a node applies them before rclpy starts."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from labference_ros.rosenv import DISCOVERY_ENV, PEERS_ENV, discovery_environ, loopback_environ

PROBE = ("import json, os; from labference_ros.rosenv import apply_loopback; apply_loopback(); "
         "print(json.dumps({k: os.environ.get(k) for k in ('ROS_AUTOMATIC_DISCOVERY_RANGE', 'ROS_STATIC_PEERS')}))")


def _applied(extra: dict[str, str]) -> dict:
    env = {**loopback_environ(), **extra}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_node_stays_on_loopback_unless_the_launcher_says_otherwise():
    assert _applied({}) == {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_STATIC_PEERS": ""}
    wide = discovery_environ("subnet", "robot-pc; 192.168.1.20")
    assert wide == {DISCOVERY_ENV: "subnet", PEERS_ENV: "robot-pc;192.168.1.20"}
    assert _applied(wide) == {"ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET", "ROS_STATIC_PEERS": "robot-pc;192.168.1.20"}
    assert _applied(discovery_environ("localhost"))["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"


def test_a_shell_variable_never_widens_what_tests_and_tools_start():
    env = loopback_environ({"LABFERENCE_DISCOVERY": "subnet", "LABFERENCE_STATIC_PEERS": "elsewhere", "HOME": "/tmp"})
    assert DISCOVERY_ENV not in env and PEERS_ENV not in env
    assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"


@pytest.mark.parametrize("scope, peers, message", [("lan", "", "discovery must be one of localhost, subnet"),
                                                   ("subnet", "robot pc", "static_peers")])
def test_a_bad_scope_or_peer_list_is_named(scope, peers, message):
    with pytest.raises(ValueError, match=message):
        discovery_environ(scope, peers)


def test_the_tests_own_process_runs_on_loopback_whatever_the_shell_said():
    """conftest drops a rig's scope from the environment before anything starts."""
    import os

    assert DISCOVERY_ENV not in os.environ and PEERS_ENV not in os.environ
    assert os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert os.environ["ROS_STATIC_PEERS"] == ""


def test_every_generated_launch_file_sets_its_nodes_discovery_scope():
    """Under `ros2 launch` a shell variable must not widen a simulation graph: each
    generated file sets the scope, to loopback unless the graph takes it as an argument."""
    from labference_ros.graphs import all_graphs
    from labference_ros.graphs.launchgen import launch_source

    for name, graph in all_graphs().items():
        text = launch_source(graph)
        takes_scope = "DeclareLaunchArgument('discovery'" in text
        if takes_scope:
            assert f"SetEnvironmentVariable({DISCOVERY_ENV!r}, LaunchConfiguration('discovery'))" in text, name
        else:
            assert f"SetEnvironmentVariable({DISCOVERY_ENV!r}, 'localhost')" in text, name
            assert f"SetEnvironmentVariable({PEERS_ENV!r}, '')" in text, name
