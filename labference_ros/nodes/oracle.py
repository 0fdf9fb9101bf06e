"""oracle: binds the run's support condition (launch argument `support`) to
each opportunity the referee opens and publishes scope-checked
labference/Intervention on /oracle/interventions, with a DeliveryReceipt per
support and opportunity on /oracle/receipts (refused or unbuildable payloads
get a receipt and are never published). With support "none" it stays idle.
Logic in oracle/service.py."""
from __future__ import annotations

import json

from labference.msg import DeliveryReceipt, Intervention, LegalSet, WorldState
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile

from labference_ros.core.operations import Operation
from labference_ros.msgconv import s_to_stamp, stamp_to_s, world_from_msg
from labference_ros.nodes.runtime import run_node
from labference_ros.oracle.service import OracleService
from labference_ros.tasks import DEFAULT_FAMILY

RECEIPT_FIELDS = ("episode_id", "receipt_id", "kind", "payload_id", "opportunity_id", "evidence_version",
                  "status", "original_output_json", "substituted_output_json", "detail_json")


class Oracle(Node):
    def __init__(self):
        super().__init__("oracle")
        cond = self.declare_parameter("condition", "none").value
        task_condition = self.declare_parameter("task_condition", "basic").value
        task = self.declare_parameter("task", DEFAULT_FAMILY).value
        self.service = OracleService(str(cond), str(task_condition), str(task))
        latched = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.pub_iv = self.create_publisher(Intervention, "/oracle/interventions", latched)
        self.pub_receipts = self.create_publisher(DeliveryReceipt, "/oracle/receipts", latched)
        # Created before the legal-set subscription: a world state and a legal set
        # ready together are taken in this order.
        if self.service.needs_world:  # geometry Assist: candidate frames at the opportunity's sim time
            self.create_subscription(WorldState, "/evaluator/world_state", self.on_world, QoSProfile(depth=200))
        if self.service.supports:
            self.create_subscription(LegalSet, "/referee/legal_set", self.on_legal, QoSProfile(depth=100))
        self.get_logger().info(f"support condition: {self.service.name}")

    def on_world(self, msg: WorldState):
        w = world_from_msg(msg)
        self._publish(self.service.on_world(w.t, w.objects))

    def on_legal(self, msg: LegalSet):
        try:
            state = json.loads(msg.state_json or "{}")
        except ValueError:
            state = {}
        ops = [Operation(o.type, o.object, o.destination) for o in msg.operations]
        self._publish(self.service.on_opportunity_legal_set(
            msg.episode_id, int(msg.opportunity_id), int(msg.evidence_version), ops, state,
            stamp_to_s(msg.header.stamp)))

    def _publish(self, results):
        for iv, receipt in results:
            # Stamped with the opportunity's sim time: the bridge delivers it at that handoff.
            stamp = receipt["stamp"]
            if iv is not None:
                m = Intervention()
                s_to_stamp(stamp, m.header.stamp)
                m.episode_id, m.intervention_id = iv["episode_id"], iv["intervention_id"]
                m.mode = Intervention.MODE_ASSIST if iv["mode"] == "assist" else Intervention.MODE_REPLACE
                m.site, m.opportunity_id, m.evidence_version = iv["site"], iv["opportunity_id"], iv["evidence_version"]
                m.payload_id, m.payload_json = receipt["payload_id"], json.dumps(iv["payload"], sort_keys=True)
                self.pub_iv.publish(m)
            r = DeliveryReceipt()
            s_to_stamp(stamp, r.header.stamp)
            for k in RECEIPT_FIELDS:
                setattr(r, k, receipt[k])
            self.pub_receipts.publish(r)


def main(args=None) -> int:
    return run_node(Oracle, args)


if __name__ == "__main__":
    raise SystemExit(main())
