"""Nodes wait, at an episode's start, only for publishers they can match:
DDS never matches a best-effort offer with a reliable request, nor a volatile
offer with a transient-local one, so waiting for those would always time out."""
from __future__ import annotations

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from labference_ros.nodes.matching import qos_compatible


def qos(reliability, durability):
    return QoSProfile(depth=1, reliability=reliability, durability=durability)


RELIABLE, BEST_EFFORT = ReliabilityPolicy.RELIABLE, ReliabilityPolicy.BEST_EFFORT
VOLATILE, LATCHED = DurabilityPolicy.VOLATILE, DurabilityPolicy.TRANSIENT_LOCAL


def test_matching_offers_are_waited_for():
    assert qos_compatible(qos(RELIABLE, VOLATILE), qos(RELIABLE, VOLATILE))
    assert qos_compatible(qos(RELIABLE, LATCHED), qos(RELIABLE, VOLATILE))
    assert qos_compatible(qos(RELIABLE, LATCHED), qos(BEST_EFFORT, LATCHED))
    assert qos_compatible(qos(BEST_EFFORT, VOLATILE), qos(BEST_EFFORT, VOLATILE))


def test_offers_dds_never_matches_are_not_waited_for():
    assert not qos_compatible(qos(BEST_EFFORT, VOLATILE), qos(RELIABLE, VOLATILE))
    assert not qos_compatible(qos(RELIABLE, VOLATILE), qos(RELIABLE, LATCHED))
    assert not qos_compatible(qos(BEST_EFFORT, LATCHED), qos(RELIABLE, LATCHED))
