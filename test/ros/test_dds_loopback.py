"""Nothing the project starts sends DDS traffic off loopback.

Two peers run inside a network namespace of the test's own whose only
non-loopback interface is a veth leading to a second, empty namespace; tcpdump
captures everything that interface sends. A control run with the default
discovery range (inside the same sealed namespaces) must be captured, which
proves the capture would see a leak.
"""
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from labference_ros.rosenv import loopback_environ
from netns import capture, needs_netns, sealed_namespace
from rosproc import peer

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def sealed_netns():
    with sealed_namespace() as ns:
        yield ns


@needs_netns
def test_project_peers_discover_each_other_and_send_nothing_off_loopback(sealed_netns, tmp_path):
    prefix = ["ip", "netns", "exec", sealed_netns]

    def exchange():
        listener = peer("listen", "3", prefix=prefix)
        talker = peer("talk", prefix=prefix)
        try:
            got = listener.wait_for("RECEIVED", count=3, timeout=40)
            assert len(got) == 3, listener.seen
        finally:
            talker.stop()
            listener.stop()

    packets = capture(sealed_netns, tmp_path, exchange)
    assert packets == []


@needs_netns
def test_capture_sees_default_discovery_leaving_the_namespace(sealed_netns, tmp_path):
    """Control: default Fast DDS discovery (sealed inside the test namespaces) is seen."""
    env = loopback_environ()
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "SUBNET"  # the default the project forbids
    code = ("import rclpy, time; from std_msgs.msg import String; rclpy.init(); n = rclpy.create_node('control');"
            "p = n.create_publisher(String, 'leak', 10); end = time.time() + 3\n"
            "while time.time() < end: p.publish(String(data='x')); rclpy.spin_once(n, timeout_sec=0.1)\n"
            "rclpy.shutdown()")

    def leak():
        subprocess.run(["ip", "netns", "exec", sealed_netns, sys.executable, "-c", code], env=env, timeout=60, check=True)

    packets = capture(sealed_netns, tmp_path, leak)
    assert any("239.255.0.1" in p for p in packets), packets


def test_only_the_runtime_initialises_ros():
    """Every ROS process goes through nodes/runtime.py, which forces loopback discovery first."""
    offenders = []
    for root in ("labference_ros", "scripts", "launch", "benchmarks", "test"):
        for path in (REPO / root).rglob("*"):
            if path.suffix not in (".py", "") or not path.is_file() or path == pathlib.Path(__file__):
                continue  # (this file's sealed-namespace control is the one deliberate exception)
            text = path.read_text(errors="ignore")
            if "rclpy.init(" in text and path.name != "runtime.py":
                offenders.append(str(path.relative_to(REPO)))
    assert offenders == []


def test_loopback_environment_overrides_the_callers_shell():
    env = loopback_environ({"ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET", "ROS_STATIC_PEERS": "10.0.0.7",
                            "FASTDDS_DEFAULT_PROFILES_FILE": "/tmp/lan.xml", "HOME": "/root"})
    assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert env["ROS_STATIC_PEERS"] == ""
    assert "FASTDDS_DEFAULT_PROFILES_FILE" not in env
