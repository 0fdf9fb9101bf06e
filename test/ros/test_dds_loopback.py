"""Nothing the project starts sends DDS traffic off loopback.

Two peers run inside a network namespace of the test's own whose only
non-loopback interface is a veth leading to a second, empty namespace; tcpdump
captures everything that interface sends. A control run with the default
discovery range (inside the same sealed namespaces) must be captured, which
proves the capture would see a leak.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from labference_ros.rosenv import loopback_environ
from rosproc import peer

REPO = pathlib.Path(__file__).resolve().parents[2]
needs_netns = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tcpdump"),
    reason="needs root, iproute2 and tcpdump (make test installs them)")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def sealed_netns():
    """A namespace with lo plus one veth 'LAN' interface into an empty sink namespace."""
    tag = uuid.uuid4().hex[:6]
    ns, sink = f"lf_{tag}", f"lfsink_{tag}"
    _ip("netns", "add", ns)
    _ip("netns", "add", sink)
    try:
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("link", "add", "lan0", "netns", ns, "type", "veth", "peer", "name", "sink0", "netns", sink)
        _ip("-n", ns, "addr", "add", "192.0.2.10/24", "dev", "lan0")  # TEST-NET-1, never routed
        _ip("-n", ns, "link", "set", "lan0", "up")
        _ip("-n", sink, "link", "set", "sink0", "up")
        _ip("-n", ns, "route", "add", "default", "dev", "lan0")
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "netns", "del", sink], capture_output=True)


def _capture(ns: str, tmp_path: pathlib.Path, run, bpf: str = "udp or tcp") -> list[str]:
    """Packets lan0 sends while run() runs. IP traffic only by default: the kernel's own
    IPv6 neighbour/router chatter is not ours. Add "or arp" to also see unicast attempts
    stuck at address resolution (the sink namespace answers nothing)."""
    pcap = tmp_path / f"lan0_{uuid.uuid4().hex[:4]}.pcap"
    tcpdump = subprocess.Popen(["ip", "netns", "exec", ns, "tcpdump", "-i", "lan0", "-n", "-U", "-w", str(pcap),
                                bpf], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while not pcap.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        run()
    finally:
        tcpdump.terminate()
        tcpdump.wait(10)
    out = subprocess.run(["tcpdump", "-n", "-r", str(pcap)], capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if line.strip()]


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

    packets = _capture(sealed_netns, tmp_path, exchange)
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

    packets = _capture(sealed_netns, tmp_path, leak)
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
