"""balance_sics as a process: a balance on a pseudo-terminal becomes /balance/reading,
faults become invalid readings with their cause, and the node outlives them."""
from __future__ import annotations

import json
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


SILENCE = {"poll": "no reply to SI within 0.3 s", "continuous": "no weight value within 0.3 s"}


@pytest.mark.parametrize("mode", ["continuous", "poll"])
def test_the_node_publishes_the_balance_and_each_fault_with_its_cause(tmp_path, domain, mode):
    env = loopback_environ()
    env["ROS_DOMAIN_ID"] = domain
    link = tmp_path / "balance"
    with SicsBalanceEmulator(link, settle_s=0.2) as emulator:
        emulator.set_load_g(123.4)
        node = Proc([sys.executable, "-m", "labference_ros.nodes.balance_sics", "--ros-args",
                     "-p", f"port:={link}", "-p", f"mode:={mode}", "-p", "poll_hz:=20.0",
                     "-p", "reply_timeout_s:=0.3"], env=env)
        probe = peer("balance", env=env)
        try:
            stable = probe.next_json("READING ", lambda r: r["stable"])
            assert stable["valid"] and stable["displayed_g"] == 123.4 and stable["source"] == f"mt_sics:{link}"
            assert emulator.received[0] == ("SIR" if mode == "continuous" else "SI")
            emulator.mute = True
            silent = probe.next_json("READING ", lambda r: not r["valid"])
            assert SILENCE[mode] in silent["invalid_reason"]
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


def test_continuous_output_puts_an_overload_of_one_value_on_the_topic(tmp_path, domain):
    """The balance indicates an overload for one weight value (a rehearsal's simulated load
    cell gives one such reading): with SIR the referee's topic has it, whenever it comes."""
    env = loopback_environ()
    env["ROS_DOMAIN_ID"] = domain
    link = tmp_path / "balance"
    with SicsBalanceEmulator(link, settle_s=0.2, update_period_s=1.0) as emulator:
        emulator.set_load_g(200.0)
        node = Proc([sys.executable, "-m", "labference_ros.nodes.balance_sics", "--ros-args",
                     "-p", f"port:={link}", "-p", "reply_timeout_s:=2.0"], env=env)
        probe = peer("balance", env=env)
        try:
            probe.next_json("READING ", lambda r: r["valid"] and r["displayed_g"] == 200.0)
            before = len(probe.seen)
            for grams in (300.0, 700.0, 310.0):
                emulator.set_load_g(grams)
            probe.next_json("READING ", lambda r: r["displayed_g"] == 310.0)
            after = [json.loads(line[len("READING "):]) for line in probe.seen[before:] if line.startswith("READING ")]
            shown = ["+" if r["overload"] else r["displayed_g"] for r in after if r["valid"]]
            assert shown[shown.index(300.0):] == [300.0, "+", 310.0], shown
            assert emulator.received == ["SIR"]  # asked once, then only listened
        finally:
            probe.stop()
            assert node.stop() == 0
