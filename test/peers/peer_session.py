"""What every peer script needs: rclpy through the project's runtime (loopback
DDS), one node spun in a background thread, and blocking service calls that
give up after a timeout instead of hanging the test."""
from __future__ import annotations

import json
import threading
import time

from labference_ros.nodes.runtime import init_ros


class PeerSession:
    def __init__(self, name: str):
        self.rclpy = init_ros([])
        from rclpy.executors import SingleThreadedExecutor

        self.node = self.rclpy.create_node(name)
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        threading.Thread(target=self.executor.spin, daemon=True).start()
        self._clients = {}

    def client(self, srv_type, service: str, timeout: float = 60.0):
        if service not in self._clients:
            client = self.node.create_client(srv_type, service)
            if not client.wait_for_service(timeout_sec=timeout):
                raise RuntimeError(f"service {service} not available")
            self._clients[service] = client
        return self._clients[service]

    @staticmethod
    def wait(future, timeout: float):
        """The future's result, or None when it is not done within timeout."""
        deadline = time.monotonic() + timeout
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.001)
        return future.result() if future.done() else None

    def call(self, srv_type, service: str, request, timeout: float = 60.0, resend_s: float | None = None):
        """The answer within timeout. `resend_s`: a call safe to repeat is asked again after that
        long without an answer (Fast DDS drops a reply sent before its writer matched this
        client: docs/pitfalls.md)."""
        client = self.client(srv_type, service, timeout)
        deadline = time.monotonic() + timeout
        while True:
            future = client.call_async(request)
            res = self.wait(future, min(resend_s or timeout, max(0.0, deadline - time.monotonic())))
            if res is not None:
                return res
            client.remove_pending_request(future)
            if time.monotonic() >= deadline:
                raise RuntimeError(f"{service} timed out")

    def bridge_status(self) -> dict:
        """The policy bridge's latest latched status, kept up to date."""
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from std_msgs.msg import String

        status: dict = {}
        self.node.create_subscription(String, "/policy_bridge/status", lambda m: status.update(json.loads(m.data)),
                                      QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        return status

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.rclpy.shutdown()
