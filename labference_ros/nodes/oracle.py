"""oracle: binds one support condition to the latest referee opportunity and
publishes scope-checked labference/Intervention on /oracle/interventions,
with a DeliveryReceipt per attempt on /oracle/receipts (refused payloads get
a rejected_scope receipt and are never published). Logic in oracle/service.py."""
from __future__ import annotations

import json

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile

from labference.msg import BalanceReading, DecisionOpportunity, DeliveryReceipt, Intervention, LegalSet
from labference_ros.core.operations import Operation
from labference_ros.nodes.runtime import run_node
from labference_ros.oracle.service import OracleService


class Oracle(Node):
    def __init__(self):
        super().__init__("oracle")
        cond = self.declare_parameter("condition", "replace:state").value
        task = self.declare_parameter("task_condition", "basic").value
        episode = self.declare_parameter("episode_id", "").value
        self.service = OracleService(str(cond), str(task), str(episode))
        qos, latched = QoSProfile(depth=50), QoSProfile(depth=50, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.pub_iv = self.create_publisher(Intervention, "/oracle/interventions", latched)
        self.pub_receipts = self.create_publisher(DeliveryReceipt, "/oracle/receipts", latched)
        self.create_subscription(BalanceReading, "/balance/reading", self.on_reading, qos)
        self.create_subscription(LegalSet, "/referee/legal_set", self.on_legal, qos)
        self.create_subscription(DecisionOpportunity, "/referee/opportunities", self.on_opportunity, qos)

    def on_reading(self, msg):
        self.service.on_reading(msg.displayed_g, msg.stable, msg.valid)
        self._flush()

    def on_legal(self, msg):
        self.service.on_legal_set(msg.opportunity_id, [Operation(o.type, o.object, o.destination)
                                                       for o in msg.operations])
        self._flush()

    def on_opportunity(self, msg):
        self.service.on_opportunity(msg.id, msg.evidence_version)
        self._flush()

    def _flush(self):
        for iv, receipt in self.service.pending():
            now = self.get_clock().now().to_msg()
            if iv is not None:
                m = Intervention()
                m.header.stamp = now
                m.episode_id, m.intervention_id = iv["episode_id"], iv["intervention_id"]
                m.mode = Intervention.MODE_ASSIST if iv["mode"] == "assist" else Intervention.MODE_REPLACE
                m.site, m.opportunity_id, m.evidence_version = iv["site"], iv["opportunity_id"], iv["evidence_version"]
                m.payload_id, m.payload_json = receipt["payload_id"], json.dumps(iv["payload"], sort_keys=True)
                self.pub_iv.publish(m)
            r = DeliveryReceipt()
            r.header.stamp = now
            for k in ("episode_id", "receipt_id", "kind", "payload_id", "opportunity_id", "evidence_version",
                      "status", "original_output_json", "substituted_output_json", "detail_json"):
                setattr(r, k, receipt[k])
            self.pub_receipts.publish(r)


def main(args=None) -> int:
    return run_node(Oracle, args)


if __name__ == "__main__":
    raise SystemExit(main())
