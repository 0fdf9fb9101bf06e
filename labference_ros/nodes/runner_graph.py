"""What the episode runner's view of the graph still lacks before the first episode."""
from __future__ import annotations

from rclpy.node import Node


def graph_missing(node: Node, clients, connected_topics, needs_oracle: bool) -> list[str]:
    """Services not ready, and topics between the other nodes without a publisher or a
    subscriber (an episode's first measurements could be published before anyone listens)."""
    missing = [c.srv_name for c in clients if not c.service_is_ready()]
    for topic in connected_topics:
        # Which side this node's view of the graph lacks: the data may flow while the
        # view (rmw's graph cache) still misses an endpoint.
        sides = [side for side, count in (("publisher", node.count_publishers(topic)),
                                          ("subscriber", node.count_subscribers(topic))) if not count]
        if sides:
            missing.append(f"{topic} (no {' and no '.join(sides)})")
    if needs_oracle and not any(  # the oracle must hear the first legal set
            i.node_name == "oracle" for i in node.get_subscriptions_info_by_topic("/referee/legal_set")):
        missing.append("/referee/legal_set (the oracle's subscription)")
    return missing
