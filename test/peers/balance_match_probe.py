"""Feeds the balance node a tare and 20 wrenches (10 ms apart) and reads its readings,
while the test runs a reader of /balance/reading with another type beside them, which
the balance's writer can never match. Prints "RESULT <json>": how many readings came and the wall seconds from the
tare to the first one.
usage: balance_match_probe.py"""
from __future__ import annotations

import json
import time

from peer_session import PeerSession


def main() -> int:
    peer = PeerSession("balance_match_probe")
    from geometry_msgs.msg import WrenchStamped
    from rclpy.qos import DurabilityPolicy, QoSProfile

    from labference.msg import BalanceReading

    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    durable = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    readings: list[float] = []
    peer.node.create_subscription(BalanceReading, "/balance/reading", lambda m: readings.append(time.monotonic()),
                                  durable)
    tare = peer.node.create_publisher(WrenchStamped, "/balance/tare", latched)
    wrench = peer.node.create_publisher(WrenchStamped, "/balance/wrench", durable)
    deadline = time.monotonic() + 60
    while (not tare.get_subscription_count() or not wrench.get_subscription_count()
           or len(peer.node.get_subscriptions_info_by_topic("/balance/reading")) < 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    empty = WrenchStamped()
    empty.wrench.force.z = 1.5
    tared_at = time.monotonic()
    tare.publish(empty)
    for k in range(20):
        msg = WrenchStamped()
        msg.header.stamp.nanosec = k * 10_000_000
        msg.wrench.force.z = 1.5
        wrench.publish(msg)
        time.sleep(0.01)
    deadline = time.monotonic() + 20
    while len(readings) < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    print("RESULT " + json.dumps({"readings": len(readings),
                                  "first_after_s": readings[0] - tared_at if readings else None}), flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
