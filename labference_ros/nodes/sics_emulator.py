"""sics_emulator: the simulated load cell as a balance that speaks MT-SICS on a pty.

The rehearsal's stand-in for the real balance: the simulated balance node's
readings (remapped to /sim_balance/reading in the rehearsal graph) set the load
of a devices/sics_emulator.py balance, which serves MT-SICS on a pseudo-terminal
published under `port`; balance_sics reads it there exactly as it reads a real
balance, so the graph's /balance/reading comes through the real serial driver.
Each simulated reading is a new weight value: with the driver's continuous output
(SIR) it goes out as one line, an overload included.
Until the first simulated reading the emulator is a busy balance (every weight value
"S I", which the driver reports as an invalid reading): it never claims a load, settled
or not, that nobody measured.
The emulator reports the simulated load cell's own stability (its filtered load
within its stability range over its window); an invalid or overloaded simulated reading is passed on as the
balance's overload or an unchanged load.

Parameters: port (the pty's path, required; {domain} becomes the ROS domain id),
capacity_g (620), settle_s (0.3: settled once unchanged this long, for the loads that carry
no stability of their own: an overload).
"""
from __future__ import annotations

import math

from rclpy.node import Node

from labference.msg import BalanceReading
from labference_ros.devices.sics_emulator import SicsBalanceEmulator
from labference_ros.nodes.balance_sics import expand_port
from labference_ros.nodes.matching import measurement_qos
from labference_ros.nodes.runtime import run_node


class SicsEmulatorNode(Node):
    def __init__(self):
        super().__init__("sics_emulator")
        port = expand_port(str(self.declare_parameter("port", "").value))
        if not port:
            raise ValueError("sics_emulator needs the path to publish its pty under: -p port:=/tmp/...")
        capacity_g = float(self.declare_parameter("capacity_g", 620.0).value)
        settle_s = float(self.declare_parameter("settle_s", 0.3).value)
        self.emulator = SicsBalanceEmulator(port, capacity_g=capacity_g, settle_s=settle_s)
        # Until the simulated load cell is heard the load is unknown: a settled 0.0 g would be a
        # measurement of nothing, which a referee could take as its reference for the pan's load.
        self.emulator.busy = True
        self.emulator.start()
        self.create_subscription(BalanceReading, "/sim_balance/reading", self.on_reading, measurement_qos(200))
        self.get_logger().info(f"MT-SICS balance on {port}, busy until the simulated load cell is heard")

    def on_reading(self, msg: BalanceReading) -> None:
        if msg.overload:
            self.emulator.set_load_g(self.emulator.capacity_g + 1.0)
        elif msg.valid and math.isfinite(msg.filtered_g):
            # Stable when the simulated load cell says so: one stability model for both referees.
            self.emulator.set_load_g(msg.filtered_g, settled=bool(msg.stable))
        else:
            return
        self.emulator.busy = False  # the load is known from now on (set before: no line of the old one)

    def close(self):
        self.emulator.stop()


def main(args=None):
    raise SystemExit(run_node(SicsEmulatorNode, args))


if __name__ == "__main__":
    main()
