"""Probe for the monitor test, in its own process: subscribes what RViz would and
prints what it saw.

  DESCRIPTION <link,...>              the latched /robot_description's links
  STATIC <parent> <child>             each /tf_static transform (every latched publisher)
  TF <parent> <child>                 the first /tf transform of each child frame
  LEGAL <opportunity> <object,...>    each /referee/legal_set (objects its operations name)
  MARKERS <opportunity> <object,...>  each /referee/markers array with an open opportunity
                                      whose legal set is known: the objects of its 'legal' markers
  CLEARED                             a marker array that starts with DELETEALL
usage: monitor_probe.py
"""
from __future__ import annotations

import re
import sys
import time
import xml.etree.ElementTree as ET


from labference_ros.nodes.runtime import init_ros


def main() -> int:
    rclpy = init_ros([])
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from std_msgs.msg import String
    from tf2_msgs.msg import TFMessage
    from visualization_msgs.msg import Marker, MarkerArray

    from labference.msg import LegalSet

    node = rclpy.create_node("monitor_probe")
    latched = QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    seen_tf: set[str] = set()

    def on_description(msg):
        links = [link.get("name") for link in ET.fromstring(msg.data).iter("link")]
        print("DESCRIPTION " + ",".join(links), flush=True)

    def on_static(msg):
        for t in msg.transforms:
            print(f"STATIC {t.header.frame_id} {t.child_frame_id}", flush=True)

    def on_tf(msg):
        for t in msg.transforms:
            if t.child_frame_id not in seen_tf:
                seen_tf.add(t.child_frame_id)
                print(f"TF {t.header.frame_id} {t.child_frame_id}", flush=True)

    def on_legal(msg):
        objects = sorted({op.object for op in msg.operations if op.object})
        print(f"LEGAL {msg.opportunity_id} {','.join(objects)}", flush=True)

    def on_markers(msg):
        if msg.markers and msg.markers[0].action == Marker.DELETEALL:
            print("CLEARED", flush=True)
        opp = [m.text for m in msg.markers if m.ns == "opportunity"]
        match = re.match(r"opportunity #(-?\d+)", opp[0]) if opp else None
        if match and not opp[0].endswith("legal pending"):
            objects = sorted(m.text for m in msg.markers if m.ns == "legal")
            print(f"MARKERS {match.group(1)} {','.join(objects)}", flush=True)

    node.create_subscription(String, "/robot_description", on_description, latched)
    node.create_subscription(TFMessage, "/tf_static", on_static, latched)
    node.create_subscription(TFMessage, "/tf", on_tf, QoSProfile(depth=100))
    legal = node.create_subscription(LegalSet, "/referee/legal_set", on_legal, QoSProfile(depth=100))
    markers = node.create_subscription(MarkerArray, "/referee/markers", on_markers, QoSProfile(depth=100))

    def ready() -> bool:
        """The referee's and the monitor's writers matched here, and the monitor's readers
        of the referee's topics discovered: the referee's volatile topics reach nobody
        who matches after they were sent, and an episode can open its first
        opportunity within a second of wall time."""
        if legal.get_publisher_count() == 0 or markers.get_publisher_count() == 0:
            return False
        return all(any(i.node_name == "monitor" for i in node.get_subscriptions_info_by_topic(topic))
                   for topic in ("/referee/opportunities", "/referee/legal_set", "/referee/events"))

    deadline = time.monotonic() + 60
    while not ready() and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    print("READY", flush=True)
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
