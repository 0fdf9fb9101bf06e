"""balance_sics: a real Mettler-Toledo balance on /balance/reading (MT-SICS over a
serial port), in place of the simulated load cell's balance node.

By default (mode continuous) it asks the balance for continuous output (SIR)
and publishes one BalanceReading per weight value the balance sends, so an
overload the balance indicates for one value is on the topic too; a balance
that does not know SIR (it answers ES) is polled instead. With mode poll it
polls SI (the current value and whether the balance calls it stable) at
poll_hz, one reading per reply; an overload shorter than the poll period can
fall between two polls. Readings are stamped with the node's clock (sim time in
a rehearsal) at reception, with source "mt_sics:<port>". A refused command, a
missing or unreadable reply and a lost port become readings with valid=false
and the cause in invalid_reason, which the referee records as validity events;
the node goes on and reopens a lost port (and asks for continuous output again).

Parameters: port (required; {domain} becomes the ROS domain id), mode (continuous | poll), baudrate (9600),
poll_hz (10: polling, and the pace of retries after a failure), reply_timeout_s (1.0: also the longest silence
of continuous output before a reading is invalid), zero_on_start (false: a zero at start needs an empty,
settled pan).
"""
from __future__ import annotations

import os
import threading

from rclpy.node import Node

from labference.msg import BalanceReading
from labference_ros.core.measurements import BalanceMeasurement
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
        self.mode = str(self.declare_parameter("mode", "continuous").value)
        if self.mode not in ("continuous", "poll"):
            raise ValueError(f"mode must be continuous or poll, got {self.mode!r}")
        poll_hz = float(self.declare_parameter("poll_hz", 10.0).value)
        if not poll_hz > 0:
            raise ValueError(f"poll_hz must be positive, got {poll_hz}")
        self.period_s = 1.0 / poll_hz
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
        self._stop = threading.Event()
        self._reader: threading.Thread | None = None
        if self.mode == "poll":
            self.create_timer(self.period_s, self.poll)
        else:
            # Blocking reads of the balance's stream, one reading per line as it arrives.
            self._reader = threading.Thread(target=self._follow, name="balance-sics-sir", daemon=True)
            self._reader.start()

    def poll(self) -> None:
        self.publish(self.device.read(immediate=True))

    def _follow(self) -> None:
        """Continuous output: start it (again after a lost port), publish every value."""
        while not self._stop.is_set():
            if self.mode == "poll":  # the balance has no SIR
                self.poll()
                self._stop.wait(self.period_s)
                continue
            if not self.device.continuous:
                try:
                    self.device.start_continuous()
                except SicsError as exc:
                    if "refused" in str(exc):
                        self.get_logger().warning(f"{exc}: polling SI at {1.0 / self.period_s:g} Hz instead")
                        self.mode = "poll"
                    else:
                        self.publish(_invalid(f"{self.device.source}: {exc}"))
                        self._stop.wait(self.period_s)
                    continue
            reading = self.device.read_continuous()
            self.publish(reading)
            if not reading.valid and not self.device.continuous:
                self._stop.wait(self.period_s)  # the port went: retry at the polling pace

    def publish(self, reading: BalanceMeasurement) -> None:
        t = self.get_clock().now().nanoseconds * 1e-9
        if reading.invalid_reason != self.last_reason:
            if reading.invalid_reason:
                self.get_logger().warning(f"invalid readings: {reading.invalid_reason}")
            elif self.last_reason is not None:
                self.get_logger().info(f"valid readings again from {self.device.source}")
            self.last_reason = reading.invalid_reason
        self.pub.publish(fill_balance_msg(BalanceReading(), reading, t, self.device.source))

    def close(self):
        self._stop.set()
        if self._reader is not None:
            self._reader.join(timeout=self.device.reply_timeout_s + 2.0)
        self.device.close()


def _invalid(reason: str) -> BalanceMeasurement:
    nan = float("nan")
    return BalanceMeasurement(raw_g=nan, filtered_g=nan, displayed_g=nan, stable=False, valid=False,
                              invalid_reason=reason)


def main(args=None):
    raise SystemExit(run_node(SicsBalanceNode, args))


if __name__ == "__main__":
    main()
