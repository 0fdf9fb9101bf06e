"""A small ROS peer for cross-process tests; runs through the project's runtime.

talk:   publish BalanceReading on /peer/reading at 20 Hz with raw_g = 1, 2, 3, ...
listen: print each received raw_g as a line "RECEIVED <raw_g> <source>"; exit after N
balance: print each /balance/reading as "READING <json>" (valid, stable, overload, displayed_g,
        invalid_reason, source); runs until stopped
serve:  serve labference/srv/Advance on /peer/advance (sim_time = 2 * duration_s)
call:   wait for /peer/advance, call it once, print "RESPONSE <sim_time>"
"""
from __future__ import annotations

import json
import sys

from labference_ros.nodes.runtime import run_node


def make(mode: str, count: int):
    from rclpy.node import Node

    from labference.msg import BalanceReading
    from labference.srv import Advance

    class Peer(Node):
        def __init__(self):
            super().__init__(f"peer_{mode}")
            self.done = False
            self.exit_code = 0
            self.n = 0
            if mode == "talk":
                self.pub = self.create_publisher(BalanceReading, "/peer/reading", 10)
                self.create_timer(0.05, self.tick)
            elif mode == "listen":
                self.create_subscription(BalanceReading, "/peer/reading", self.on_reading, 10)
            elif mode == "balance":
                from labference_ros.nodes.matching import measurement_qos

                self.create_subscription(BalanceReading, "/balance/reading", self.on_balance, measurement_qos(200))
            elif mode == "serve":
                self.create_service(Advance, "/peer/advance", self.on_advance)
            elif mode == "call":
                self.client = self.create_client(Advance, "/peer/advance")
                self.future = None
                self.create_timer(0.05, self.poll)
                self.waited = 0

        def tick(self):
            self.n += 1
            msg = BalanceReading(raw_g=float(self.n), displayed_g=round(self.n * 1.05, 1), stable=True, valid=True)
            msg.source = "peer"
            self.pub.publish(msg)

        def on_reading(self, msg):
            print(f"RECEIVED {msg.raw_g} {msg.source} {msg.displayed_g}", flush=True)
            self.n += 1
            if self.n >= count:
                self.done = True

        def on_balance(self, msg):
            fields = {"valid": msg.valid, "stable": msg.stable, "overload": msg.overload,
                      "displayed_g": None if msg.displayed_g != msg.displayed_g else msg.displayed_g,
                      "invalid_reason": msg.invalid_reason, "source": msg.source}
            print("READING " + json.dumps(fields), flush=True)

        def on_advance(self, request, response):
            response.success = True
            response.sim_time = 2.0 * request.duration_s
            response.message = "advanced"
            return response

        def poll(self):
            if self.future is None:
                if self.client.service_is_ready():
                    self.future = self.client.call_async(Advance.Request(duration_s=1.25))
                return
            if self.future.done():
                print(f"RESPONSE {self.future.result().sim_time}", flush=True)
                self.done = True

    return Peer()


if __name__ == "__main__":
    mode = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    sys.exit(run_node(lambda: make(mode, count), args=[]))
