"""World states and balance readings for a referee under test, published as lab_sim and the
balance publish them (measurement QoS), stamped at k x 10 ms; the writers wait until the
referee's readers have matched them."""
from __future__ import annotations

import time


class MeasurementFeed:
    def __init__(self, peer, timeout_s: float = 60.0):
        from labference.msg import BalanceReading, WorldState

        from labference_ros.nodes.matching import measurement_qos

        self.WorldState, self.BalanceReading = WorldState, BalanceReading
        self.worlds = peer.node.create_publisher(WorldState, "/evaluator/world_state", measurement_qos(500))
        self.readings = peer.node.create_publisher(BalanceReading, "/balance/reading", measurement_qos(500))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and min(self.worlds.get_subscription_count(),
                                                  self.readings.get_subscription_count()) < 1:
            time.sleep(0.01)

    @staticmethod
    def stamped(msg, k: int):
        msg.header.stamp.nanosec = k * 10_000_000
        return msg

    def world(self, k: int) -> None:
        self.worlds.publish(self.stamped(self.WorldState(), k))

    def reading(self, k: int) -> None:
        self.readings.publish(self.stamped(self.BalanceReading(stable=True, valid=True, source="probe"), k))
