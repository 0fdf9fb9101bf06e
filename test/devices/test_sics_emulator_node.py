"""The rehearsal's balance chain: simulated readings -> sics_emulator (MT-SICS on a
pty) -> balance_sics (the real serial driver) -> /balance/reading."""
from __future__ import annotations

import os
import pathlib
import sys
import time

import pytest

from labference_ros.rosenv import loopback_environ
from ros_domains import own_domain
from rosproc import Proc, peer

SIM_PEER = pathlib.Path(__file__).resolve().parents[1] / "peers" / "sim_reading_peer.py"


@pytest.fixture
def domain():
    with own_domain() as domain_id:
        yield domain_id


def test_the_simulated_load_reaches_the_graph_through_the_serial_driver(tmp_path, domain):
    env = loopback_environ()
    env["ROS_DOMAIN_ID"] = domain
    port = tmp_path / "balance"
    load = tmp_path / "load.txt"

    def set_load(grams: str) -> None:
        # Whole or not at all: the peer reads the file 20 times a second and dies on a half-written one.
        partial = tmp_path / "load.partial"
        partial.write_text(grams)
        os.replace(partial, load)

    set_load("52.34")
    procs = [Proc([sys.executable, "-m", "labference_ros.nodes.sics_emulator", "--ros-args",
                   "-p", f"port:={port}", "-p", "settle_s:=0.2"], env=env)]
    try:
        deadline = time.monotonic() + 60
        while not port.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert port.is_symlink(), procs[0].seen
        procs.append(Proc([sys.executable, "-m", "labference_ros.nodes.balance_sics", "--ros-args",
                           "-p", f"port:={port}", "-p", "poll_hz:=20.0", "-p", "reply_timeout_s:=0.5"], env=env))
        probe = peer("balance", env=env)
        procs.append(probe)
        # Before the simulated load cell is heard the load is unknown: the balance is busy, never a
        # settled 0.0 g that a referee would take as the pan's load (seen as a 340 g disagreement
        # when the simulated balance's first reading came late).
        unheard = probe.next_json("READING ", lambda r: True, timeout=40.0)
        assert not unheard["valid"] and "busy" in unheard["invalid_reason"], unheard
        procs.append(Proc([sys.executable, str(SIM_PEER), str(load)], env=env))
        first = probe.next_json("READING ", lambda r: r["valid"], timeout=40.0)
        assert first["displayed_g"] == 52.34 and first["source"] == f"mt_sics:{port}"
        assert probe.next_json("READING ", lambda r: r["valid"] and r["stable"], timeout=40.0)["displayed_g"] == 52.34
        set_load("120.5")
        # The balance sees the load change (unstable, as MT-SICS says "D") before it settles.
        assert probe.next_json("READING ", lambda r: r["valid"] and not r["stable"], timeout=40.0)["displayed_g"] == 120.5
        assert probe.next_json("READING ", lambda r: r["valid"] and r["stable"], timeout=40.0)["displayed_g"] == 120.5
        set_load("700")  # over the emulated balance's 620 g capacity
        assert probe.next_json("READING ", lambda r: r["overload"], timeout=40.0)["valid"]
    finally:
        for proc in reversed(procs):
            proc.stop()
