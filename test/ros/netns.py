"""A network namespace of a test's own whose only way out is a veth into an empty
namespace, and a capture of everything that interface sends (test_dds_loopback,
test_no_outbound). Traffic to loopback stays inside; DNS to the machine's
resolver (not on loopback) would leave through the veth and is captured."""
from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import subprocess
import time
import uuid

import pytest

needs_netns = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tcpdump"),
    reason="needs root, iproute2 and tcpdump (make test installs them)")


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextlib.contextmanager
def sealed_namespace():
    """A namespace with lo plus one veth 'LAN' interface into an empty sink namespace."""
    tag = uuid.uuid4().hex[:6]
    ns, sink = f"lf_{tag}", f"lfsink_{tag}"
    ip("netns", "add", ns)
    ip("netns", "add", sink)
    try:
        ip("-n", ns, "link", "set", "lo", "up")
        ip("link", "add", "lan0", "netns", ns, "type", "veth", "peer", "name", "sink0", "netns", sink)
        ip("-n", ns, "addr", "add", "192.0.2.10/24", "dev", "lan0")  # TEST-NET-1, never routed
        ip("-n", ns, "link", "set", "lan0", "up")
        ip("-n", sink, "link", "set", "sink0", "up")
        # A gateway with a fixed neighbour entry: a packet for any address leaves as a
        # frame at once, not an ARP request that waits (and hides its port) for an answer.
        ip("-n", ns, "neigh", "add", "192.0.2.1", "lladdr", "02:00:00:00:00:01", "dev", "lan0", "nud", "permanent")
        ip("-n", ns, "route", "add", "default", "via", "192.0.2.1", "dev", "lan0")
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "netns", "del", sink], capture_output=True)


def capture(ns: str, tmp_path: pathlib.Path, run, bpf: str = "udp or tcp") -> list[str]:
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
