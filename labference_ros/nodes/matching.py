"""Waiting for discovery before an episode starts.

DDS matches each subscription with each publisher asynchronously, seconds after
both exist under load. A node started with the graph may therefore not yet
receive a peer's messages when the first episode begins, and a volatile message
published then (the first world state, the first camera frame) is lost for
good. Nodes that must see an episode from its first message call
``await_matched`` when the episode starts, and lab_sim, whose first frames of
a timeline go out once, waits with ``unmatched_readers`` before it publishes them.
"""
from __future__ import annotations

import time

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSCompatibility, QoSProfile, ReliabilityPolicy, qos_check_compatible


# Published at every measurement instant with the same stamp (lab_sim's world state and the
# balance's reading of its wrench; in the rehearsal and on a rig, the world estimator's):
# how far each has got tells whether an episode's measurements are all in (the referee's
# and the recorder's finish wait for them).
PAIRED_MEASUREMENT_TOPICS = ("/evaluator/world_state", "/balance/reading")


def measurement_qos(depth: int) -> QoSProfile:
    """QoS of the measurement chain (wrench -> reading, world state) an episode is scored from.

    Transient local on both ends: a reader that matches its writer late still gets
    the samples written before the match. Waiting for matching alone is not enough:
    DDS matches the writer and the reader side separately, and a volatile reader may
    skip what a writer sent before the reader had matched it. A lost first sample
    deadlocks a sync-mode episode (the referee holds the first delivery until the
    measurement at its stamp arrives), so these topics are latched like the receipts.
    Readers that do not need the first sample may stay volatile (compatible)."""
    return QoSProfile(depth=depth, durability=DurabilityPolicy.TRANSIENT_LOCAL)


# Sync mode: how many arm or gripper commands may wait in a reader's queue (and in the
# writer's history, for a reader that has not acknowledged them): the policy bridge sends
# the rows of two advances at once, up to 50 each, while lab_sim may still be stepping.
COMMAND_QUEUE_DEPTH = 128


def command_qos() -> QoSProfile:
    """The arm trajectory and gripper command topics: reliable, deep enough that no row of
    the advances sent ahead is overwritten before lab_sim takes it (a lost row would stall
    the advance that waits for its boundary)."""
    return QoSProfile(depth=COMMAND_QUEUE_DEPTH)


IMAGE_RELIABILITY = {"reliable": ReliabilityPolicy.RELIABLE, "best_effort": ReliabilityPolicy.BEST_EFFORT}


def image_qos(reliability: str = "reliable") -> QoSProfile:
    """Camera subscriptions. Reliable, as lab_sim publishes (a dropped frame would change what
    a tested system sees); a real camera driver that publishes best effort (sensor-data
    QoS) matches only a best-effort reader."""
    if reliability not in IMAGE_RELIABILITY:
        raise ValueError(f"image reliability must be one of {', '.join(IMAGE_RELIABILITY)}, got {reliability!r}")
    return QoSProfile(depth=2, reliability=IMAGE_RELIABILITY[reliability])


def _matching_policies(profile) -> QoSProfile:
    """The policies that decide matching here: reliability and durability. A profile the
    graph reports carries deadline and liveliness lease as Infinite where a node's own
    profile leaves them unset, and rclpy's check then calls the two incompatible."""
    return QoSProfile(depth=1, reliability=profile.reliability, durability=profile.durability)


def qos_compatible(offered, requested) -> bool:
    """Whether DDS can match a publisher offering `offered` with a subscription
    requesting `requested` (rclpy's own request/offer check on reliability and
    durability; 'cannot tell' counts as yes)."""
    compatibility, _reason = qos_check_compatible(_matching_policies(offered), _matching_policies(requested))
    return compatibility != QoSCompatibility.ERROR


def unmatched_topics(node: Node, subscriptions: dict, required=()) -> list[str]:
    """Topics with a compatible publisher in the graph that `node`'s subscription
    (from the topic -> Subscription map) has not matched yet, and the `required`
    ones with no matched publisher at all: before discovery has announced a writer
    to this node, there is no publisher in its graph to wait for."""
    pending = []
    for topic, sub in subscriptions.items():
        matched = sub.get_publisher_count()
        offers = [p.qos_profile for p in node.get_publishers_info_by_topic(sub.topic_name)]  # remaps applied
        matchable = sum(qos_compatible(offer, sub.qos_profile) for offer in offers)
        if matched < matchable or (topic in required and matched == 0):
            pending.append(topic)
    return pending


def unmatched_readers(node: Node, publishers: dict) -> list[str]:
    """Topics (from the topic -> Publisher map) whose publisher has not matched every
    compatible subscription the graph announces. The other half of matching: a reader
    that has matched its writer may still not be matched by the writer, which then
    sends it nothing (a volatile sample written meanwhile is lost to it for good)."""
    pending = []
    for topic, pub in publishers.items():
        # The publisher's own name: remaps applied.
        wanted = [s.qos_profile for s in node.get_subscriptions_info_by_topic(pub.topic_name)]
        matchable = sum(qos_compatible(pub.qos_profile, request) for request in wanted)
        if pub.get_subscription_count() < matchable:
            pending.append(topic)
    return pending


def warn_unmatched_readers(node: Node, pending: list[str]) -> None:
    if pending:
        node.get_logger().warning(f"publishing before matching the subscriptions of {', '.join(pending)}")


def await_matched(node: Node, subscriptions: dict, timeout_s: float, required=()) -> list[str]:
    """Block until every subscription has matched every compatible publisher the
    graph announces, and each `required` topic at least one, or `timeout_s` passes;
    returns the topics still unmatched (and logs a warning naming them)."""
    deadline = time.monotonic() + timeout_s
    pending = unmatched_topics(node, subscriptions, required)
    while pending and time.monotonic() < deadline:
        time.sleep(0.01)  # matching runs in the middleware's threads, not in this executor
        pending = unmatched_topics(node, subscriptions, required)
    if pending:
        node.get_logger().warning(f"starting before matching the publishers of {', '.join(pending)}")
    return pending
