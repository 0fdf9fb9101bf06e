"""Stand-in balance: a node that only exists (the runner does not talk to it)."""
from __future__ import annotations

import sys

from labference_ros.nodes.runtime import run_node


def make():
    from rclpy.node import Node

    return Node("balance")


if __name__ == "__main__":
    sys.exit(run_node(make))
