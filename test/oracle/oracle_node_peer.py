"""Runs the oracle node in-process with a peer that plays the referee; prints one JSON line with what arrived on /oracle/*."""
import json
import sys

from labference_ros.nodes.runtime import init_ros

rclpy = init_ros(sys.argv)
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile  # noqa: E402

from labference.msg import DeliveryReceipt, Intervention, LegalSet, Operation  # noqa: E402
from labference_ros.nodes.oracle import Oracle  # noqa: E402

oracle = Oracle()
peer = rclpy.create_node("oracle_peer")
got = {"interventions": [], "receipts": []}
latched = QoSProfile(depth=50, durability=DurabilityPolicy.TRANSIENT_LOCAL)
peer.create_subscription(Intervention, "/oracle/interventions",
                         lambda m: got["interventions"].append(
                             {"site": m.site, "mode": m.mode, "opportunity_id": m.opportunity_id,
                              "payload": json.loads(m.payload_json), "payload_id": m.payload_id}), latched)
peer.create_subscription(DeliveryReceipt, "/oracle/receipts",
                         lambda m: got["receipts"].append({"status": m.status, "opportunity_id": m.opportunity_id}),
                         latched)
pub_legal = peer.create_publisher(LegalSet, "/referee/legal_set", QoSProfile(depth=50))
ex = SingleThreadedExecutor()
ex.add_node(oracle)
ex.add_node(peer)
for _ in range(600):
    ex.spin_once(timeout_sec=0.05)
    if pub_legal.get_subscription_count() and not got["receipts"]:
        # The referee's legal set at an opportunity carries the evidence's reference state.
        legal = LegalSet(episode_id="ep", opportunity_id=3, evidence_version=2,
                         operations=[Operation(type="add", object="std_20", destination="pan")],
                         state_json=json.dumps({"reading_ready": True, "last_stable_reading_g": 160.0}))
        pub_legal.publish(legal)
    if len(got["receipts"]) >= 2 and len(got["interventions"]) >= 2:
        break
print("RESULT " + json.dumps(got, sort_keys=True))
sys.stdout.flush()
oracle.destroy_node()
peer.destroy_node()
rclpy.shutdown()
