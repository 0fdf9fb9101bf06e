"""The measurement chain survives late discovery: a balance that joins after
lab_sim published the tare and the episode's first wrenches still reads the
episode from t = 0, and the first readings reach a reader that exists already.
A lost first wrench or reading deadlocks a sync-mode episode (the referee holds
the first delivery until the measurement at its stamp), as seen under CI load."""
from __future__ import annotations

import json
import pathlib
import sys

from rosproc import Proc

PEER = pathlib.Path(__file__).resolve().parents[1] / "peers" / "late_balance_peer.py"


def test_a_balance_started_after_the_first_wrenches_reads_them_all_calibrated():
    peer = Proc([sys.executable, str(PEER)])
    balance = None
    try:
        assert peer.wait_for("PUBLISHED", timeout=60), peer.seen
        balance = Proc([sys.executable, "-m", "labference_ros.nodes.balance"])
        lines = peer.wait_for("READINGS", timeout=90)
        assert lines, peer.seen + (balance.seen if balance else [])
        readings = json.loads(lines[0][len("READINGS "):])
    finally:
        peer.stop()
        if balance is not None:
            balance.stop()
    assert [round(t, 2) for t, *_ in readings] == [0.0, 0.01, 0.02, 0.03, 0.04, 0.05]
    # Each wrench was read after the tare (none is "not calibrated"), as 10 g.
    assert all(valid and reason == "" for _, valid, reason, _ in readings), readings
    assert all(abs(raw - 10.0) < 1e-6 for *_, raw in readings), readings
