"""Stand-in for a real-cell node this test does not exercise (marker tracker, gripper
bridge): it only stays up."""
from __future__ import annotations

import sys

from labference_ros.nodes.runtime import run_node


def make():
    from rclpy.node import Node

    return Node("idle_stand_in")


if __name__ == "__main__":
    sys.exit(run_node(make))
