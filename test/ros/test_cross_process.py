"""Custom messages and services between separate processes, discovered on loopback."""
from __future__ import annotations

from rosproc import peer


def test_custom_message_between_processes():
    listener = peer("listen", "5")
    talker = peer("talk")
    try:
        got = listener.wait_for("RECEIVED", count=5, timeout=40)
        assert len(got) == 5, listener.seen
        values = [float(line.split()[1]) for line in got]
        assert values == sorted(values) and values[0] >= 1.0
        # The custom fields survive the trip between processes.
        assert all(line.split()[2] == "peer" for line in got)
        assert listener.popen.wait(timeout=15) == 0
    finally:
        talker.stop()
        listener.stop()


def test_service_call_between_processes():
    server = peer("serve")
    client = peer("call")
    try:
        got = client.wait_for("RESPONSE", timeout=40)
        assert got == ["RESPONSE 2.5"], client.seen
    finally:
        client.stop()
        server.stop()
