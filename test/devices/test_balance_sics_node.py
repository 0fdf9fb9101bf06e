"""balance_sics as a process: a balance on a pseudo-terminal becomes /balance/reading,
faults become invalid readings with their cause, and the node outlives them."""
from __future__ import annotations

import sys

import pytest

from labference_ros.devices.sics_emulator import SicsBalanceEmulator
from labference_ros.rosenv import loopback_environ
from ros_domains import own_domain
from rosproc import Proc, peer


@pytest.fixture
def domain():
    with own_domain() as domain_id:
        yield domain_id


def test_the_node_publishes_the_balance_and_each_fault_with_its_cause(tmp_path, domain):
    env = loopback_environ()
    env["ROS_DOMAIN_ID"] = domain
    link = tmp_path / "balance"
    with SicsBalanceEmulator(link, settle_s=0.2) as emulator:
        emulator.set_load_g(123.4)
        node = Proc([sys.executable, "-m", "labference_ros.nodes.balance_sics", "--ros-args",
                     "-p", f"port:={link}", "-p", "poll_hz:=20.0", "-p", "reply_timeout_s:=0.3"], env=env)
        probe = peer("balance", env=env)
        try:
            stable = probe.next_json("READING ", lambda r: r["stable"])
            assert stable["valid"] and stable["displayed_g"] == 123.4 and stable["source"] == f"mt_sics:{link}"
            emulator.mute = True
            silent = probe.next_json("READING ", lambda r: not r["valid"])
            assert "no reply to SI" in silent["invalid_reason"]
            emulator.mute = False
            emulator.disconnect()
            probe.next_json("READING ", lambda r: "lost" in r["invalid_reason"] or "unavailable" in r["invalid_reason"])
            emulator.set_load_g(700.0)
            emulator.reconnect()
            assert probe.next_json("READING ", lambda r: r["valid"])["overload"]
            assert node.popen.poll() is None, node.seen
        finally:
            probe.stop()
            assert node.stop() == 0


def test_without_a_port_the_node_says_what_it_needs(domain):
    env = loopback_environ()
    env["ROS_DOMAIN_ID"] = domain
    node = Proc([sys.executable, "-m", "labference_ros.nodes.balance_sics"], env=env)
    assert node.popen.wait(timeout=60) != 0
    node.wait_for("", count=100, timeout=2)
    text = "\n".join(node.seen)
    assert "needs the balance's serial port" in text and "Traceback" not in text
