"""balance_sics: a real Mettler-Toledo balance on /balance/reading (MT-SICS over a
serial port), in place of the simulated load cell's balance node.

It polls SI (the current value and whether the balance calls it stable) at
poll_hz and publishes one BalanceReading per reply, stamped with the node's
clock (sim time in a rehearsal) and with source "mt_sics:<port>". A refused
command, a missing or unreadable reply and a lost port become readings with
valid=false and the cause in invalid_reason, which the referee records as
validity events; the node keeps polling and reopens a lost port.

Parameters: port (required; {domain} becomes the ROS domain id), baudrate (9600), poll_hz (10), reply_timeout_s
(1.0), zero_on_start (false: a zero at start needs an empty, settled pan).
"""
from __future__ import annotations

import os

from rclpy.node import Node

from labference.msg import BalanceReading
from labference_ros.devices.sics_balance import SicsBalance, SicsError
from labference_ros.msgconv import fill_balance_msg
from labference_ros.nodes.matching import measurement_qos
from labference_ros.nodes.runtime import run_node


def expand_port(port: str) -> str:
    """A port path with {domain} replaced by this process's ROS domain: the rehearsal's
    emulator and driver meet on one pty per graph, and two graphs never share one."""
    return port.replace("{domain}", os.environ.get("ROS_DOMAIN_ID", "0"))


class SicsBalanceNode(Node):
    def __init__(self):
        super().__init__("balance")
        port = expand_port(str(self.declare_parameter("port", "").value))
        if not port:
            raise ValueError("balance_sics needs the balance's serial port: -p port:=/dev/serial/by-id/...")
        poll_hz = float(self.declare_parameter("poll_hz", 10.0).value)
        if not poll_hz > 0:
            raise ValueError(f"poll_hz must be positive, got {poll_hz}")
        self.device = SicsBalance(port, baudrate=int(self.declare_parameter("baudrate", 9600).value),
                                  reply_timeout_s=float(self.declare_parameter("reply_timeout_s", 1.0).value))
        self.pub = self.create_publisher(BalanceReading, "/balance/reading", measurement_qos(200))
        self.last_reason: str | None = None
        if bool(self.declare_parameter("zero_on_start", False).value):
            try:
                reply = self.device.zero()
                self.get_logger().info(f"zero: {reply.describe()}")
            except SicsError as exc:
                self.get_logger().error(f"zero at start failed: {exc}")
        self.create_timer(1.0 / poll_hz, self.poll)

    def poll(self) -> None:
        reading = self.device.read(immediate=True)
        t = self.get_clock().now().nanoseconds * 1e-9
        if reading.invalid_reason != self.last_reason:
            if reading.invalid_reason:
                self.get_logger().warning(f"invalid readings: {reading.invalid_reason}")
            elif self.last_reason is not None:
                self.get_logger().info(f"valid readings again from {self.device.source}")
            self.last_reason = reading.invalid_reason
        self.pub.publish(fill_balance_msg(BalanceReading(), reading, t, self.device.source))

    def close(self):
        self.device.close()


def main(args=None):
    raise SystemExit(run_node(SicsBalanceNode, args))


if __name__ == "__main__":
    main()
