"""balance: load-cell wrench -> grams (paper eq. 8-9), display quantum, stability,
overload and sensor errors. Publishes one BalanceReading per wrench, with the
wrench's stamp, so the referee can pair readings and world states exactly.

In a physical pilot the same topic is fed by a driver for the real balance.
"""
from __future__ import annotations

import time
from collections import deque

from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile

from labference.msg import BalanceReading
from labference_ros.core.balance import BalanceModel, BalanceParameters
from labference_ros.msgconv import fill_balance_msg, stamp_to_s
from labference_ros.nodes.matching import measurement_qos, unmatched_readers, warn_unmatched_readers
from labference_ros.nodes.runtime import run_node


MATCH_POLL_S = 0.005


class Balance(Node):
    def __init__(self, **node_options):
        # node_options: rclpy Node keywords, e.g. a composed process's own arguments per node.
        super().__init__("balance", **node_options)
        g0 = self.declare_parameter("gravity", 9.81).value
        self.empty_force = self.declare_parameter("empty_force_n", float("nan")).value
        self.source = self.declare_parameter("source", "sim_load_cell").value
        self.model = BalanceModel(BalanceParameters(), float(g0))
        # Latched chain (nodes/matching.py): a balance that matches lab_sim late still
        # gets the episode's first wrenches, and the referee its first readings.
        # history: readings kept for a reader that fell behind (the sim graph's 2000, as
        # lab_sim's sync-mode writers keep: nodes/sim_outputs.py).
        history = int(self.declare_parameter("history", 200).value)
        self.pub = self.create_publisher(BalanceReading, "/balance/reading", measurement_qos(history))
        self.create_subscription(WrenchStamped, "/balance/wrench", self.on_wrench, measurement_qos(200))
        # Empty-pan calibration: the scene measures its load cell before the sample
        # is introduced and publishes that wrench (latched) at every reset.
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.create_subscription(WrenchStamped, "/balance/tare", self.on_tare, latched)
        self.last_t = None
        # Wrenches that arrive before the first tare (the two topics match independently)
        # wait for it instead of becoming "not calibrated" readings. A rejected tare
        # ends the wait: its invalid readings are what the referee must see.
        self.before_tare: deque[WrenchStamped] = deque(maxlen=1000)
        self.tare_seen = False
        if self.empty_force == self.empty_force:  # a fixed tare (not NaN) for a physical rig
            self.model.calibrate_empty(self.empty_force)
            self.tare_seen = True
        # After each tare (a new timeline) the readings wait, at most match_timeout_s, until
        # this writer has matched every reader the graph shows: a reader matched only by its
        # own side gets nothing yet, and Fast DDS can lose a latched sample written while
        # the two sides match (eProsima/Fast-DDS#3822; a recorder lost one reading so).
        self.match_timeout_s = float(self.declare_parameter("match_timeout_s", 5.0).value)
        self.readers_due: float | None = None  # monotonic deadline while the readings wait
        self.match_timer = self.create_timer(MATCH_POLL_S, self.release_when_matched)
        self.match_timer.cancel()

    def on_tare(self, msg: WrenchStamped):
        try:
            self.model.calibrate_empty(msg.wrench.force.z)
        except ValueError as exc:
            self.get_logger().error(f"tare rejected: {exc}")
        self.last_t = None
        self.tare_seen = True
        self.readers_due = time.monotonic() + self.match_timeout_s
        self.release_when_matched()

    def release_when_matched(self) -> None:
        """The held wrenches become readings once the reading writer matched its readers
        (or the wait ran out, said with the topic)."""
        if self.readers_due is None:
            self.match_timer.cancel()
            return
        pending = unmatched_readers(self, {"/balance/reading": self.pub})
        if pending and time.monotonic() < self.readers_due:
            if self.match_timer.is_canceled():
                self.match_timer.reset()
            return
        warn_unmatched_readers(self, pending)
        self.readers_due = None
        self.match_timer.cancel()
        waiting = list(self.before_tare)
        self.before_tare.clear()
        for wrench in waiting:
            self.on_wrench(wrench)

    def on_wrench(self, msg: WrenchStamped):
        if not self.tare_seen or self.readers_due is not None:
            self.before_tare.append(msg)
            return
        t = stamp_to_s(msg.header.stamp)
        if self.last_t is not None and t < self.last_t:
            # The simulator was reset: a new episode starts a new filter window.
            self.model.reset()
        self.last_t = t
        f, q = msg.wrench.force, msg.wrench.torque
        reading = self.model.update(t, (f.x, f.y, f.z), (q.x, q.y, q.z))
        self.pub.publish(fill_balance_msg(BalanceReading(), reading, t, self.source))


NODE = Balance  # what nodes/composed.py builds when the balance shares a process


def main(args=None):
    raise SystemExit(run_node(Balance, args))


if __name__ == "__main__":
    main()
