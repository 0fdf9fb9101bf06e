"""Plays lab_sim's side of the measurement chain before the balance exists.

Publishes the tare and the first wrenches of an episode (t = 0.00 .. 0.05 s, 10 g
on the pan), prints "PUBLISHED", then collects /balance/reading and prints
"READINGS <json list of [t, valid, invalid_reason, raw_g]>" once it has 6 of
them (or after 60 s). The test starts the real balance node only after
"PUBLISHED": a node that matches late must still read the episode from t = 0.
"""
from __future__ import annotations

import json
import sys
import time

from peer_session import PeerSession

G0 = 9.81
EMPTY_N = 10.0
SAMPLE_G = 10.0


def main() -> int:
    peer = PeerSession("late_balance_peer")
    from builtin_interfaces.msg import Time
    from geometry_msgs.msg import WrenchStamped
    from rclpy.qos import DurabilityPolicy, QoSProfile

    from labference.msg import BalanceReading
    from labference_ros.msgconv import s_to_stamp, stamp_to_s
    from labference_ros.nodes.matching import measurement_qos

    node = peer.node
    tare_pub = node.create_publisher(WrenchStamped, "/balance/tare",
                                     QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    wrench_pub = node.create_publisher(WrenchStamped, "/balance/wrench", measurement_qos(200))
    readings = []
    node.create_subscription(BalanceReading, "/balance/reading",
                             lambda m: readings.append([stamp_to_s(m.header.stamp), m.valid, m.invalid_reason,
                                                        m.raw_g]),
                             measurement_qos(200))

    def wrench(t: float, force_z: float) -> WrenchStamped:
        msg = WrenchStamped()
        msg.header.stamp = s_to_stamp(t, Time())
        msg.wrench.force.z = force_z
        return msg

    tare_pub.publish(wrench(0.0, EMPTY_N))
    for i in range(6):
        wrench_pub.publish(wrench(i * 0.01, EMPTY_N + SAMPLE_G / 1000.0 * G0))
    print("PUBLISHED", flush=True)
    deadline = time.monotonic() + 60
    while len(readings) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    print("READINGS " + json.dumps(sorted(readings)), flush=True)
    peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
