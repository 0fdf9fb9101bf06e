"""Stand-in balance: a node that only exists (the runner does not talk to it)."""
from __future__ import annotations

import sys

from labference_ros.nodes.runtime import run_node


def make():
    from rclpy.node import Node

    from fake_common import occupy_topics

    node = Node("balance")
    occupy_topics(node, "balance")
    return node


if __name__ == "__main__":
    sys.exit(run_node(make))
