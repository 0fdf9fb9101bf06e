"""Conversions between ROS messages and core data.

Field access only (no rclpy import): the same functions read messages from a
live subscription and messages deserialized from a bag by the replay audit.
"""
from __future__ import annotations

import json
import math

from labference_ros.core.input_merge import Delivery
from labference_ros.core.measurements import BalanceMeasurement, ObjectMeasurement, WorldMeasurement


def stamp_to_s(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def s_to_stamp(t: float, stamp) -> object:
    """Fill a builtin_interfaces/Time with sim time t (nanosecond rounding)."""
    ns = int(round(t * 1e9))
    stamp.sec, stamp.nanosec = divmod(ns, 1_000_000_000)
    return stamp


def speed(vector3) -> float:
    return math.sqrt(vector3.x ** 2 + vector3.y ** 2 + vector3.z ** 2)


def balance_from_msg(msg) -> BalanceMeasurement:
    return BalanceMeasurement(raw_g=msg.raw_g, filtered_g=msg.filtered_g, displayed_g=msg.displayed_g,
                              stable=msg.stable, overload=msg.overload, valid=msg.valid,
                              invalid_reason=msg.invalid_reason)


def fill_balance_msg(msg, b: BalanceMeasurement, t: float, source: str):
    s_to_stamp(t, msg.header.stamp)
    msg.header.frame_id = "pan_load_cell"
    msg.raw_g, msg.filtered_g, msg.displayed_g = b.raw_g, b.filtered_g, b.displayed_g
    msg.stable, msg.overload, msg.valid = b.stable, b.overload, b.valid
    msg.invalid_reason, msg.source = b.invalid_reason, source
    return msg


def world_from_msg(msg, balance: BalanceMeasurement | None = None) -> WorldMeasurement:
    objects = {}
    for o in msg.objects:
        p, q = o.pose.position, o.pose.orientation
        objects[o.name] = ObjectMeasurement(
            name=o.name, kind=o.kind, position=(p.x, p.y, p.z), orientation=(q.w, q.x, q.y, q.z),
            linear_speed=speed(o.twist.linear), angular_speed=speed(o.twist.angular),
            contacts=tuple(o.contacts))
    return WorldMeasurement(t=stamp_to_s(msg.header.stamp), objects=objects, gripper_width=msg.gripper_width,
                            gripper_closing=msg.gripper_closing, pan_contacts=tuple(msg.pan_contacts),
                            balance=balance, environment=environment_from_json(msg.environment_json))


def environment_from_json(text: str) -> dict | None:
    """A world state's environment field: None when empty; text that is not a JSON
    object is kept, marked unreadable (the referee records it, nothing is lost)."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"unreadable": text}


def fill_world_msg(msg, m: WorldMeasurement, object_msg_type, supports: dict[str, str]) -> object:
    """``supports`` (name -> support class) labels the support for people and RViz;
    the referee recomputes support from the contacts itself."""
    s_to_stamp(m.t, msg.header.stamp)
    msg.header.frame_id = "world"
    msg.gripper_width = m.gripper_width
    msg.gripper_closing = m.gripper_closing
    msg.hand_on_pan = m.hand_on_pan
    msg.pan_contacts = list(m.pan_contacts)
    msg.environment_json = json.dumps(m.environment, sort_keys=True) if m.environment else ""
    out = []
    for name in sorted(m.objects):
        o = m.objects[name]
        om = object_msg_type()
        om.name, om.kind = o.name, o.kind
        om.pose.position.x, om.pose.position.y, om.pose.position.z = o.position
        om.pose.orientation.w, om.pose.orientation.x, om.pose.orientation.y, om.pose.orientation.z = o.orientation
        # Speeds only: the evaluator needs magnitudes, directions are not measured here.
        om.twist.linear.x = o.linear_speed
        om.twist.angular.x = o.angular_speed
        om.supported_by = supports.get(o.name, "")
        om.left_finger_contact, om.right_finger_contact = o.left_finger_contact, o.right_finger_contact
        om.contacts = list(o.contacts)
        out.append(om)
    msg.objects = out
    return msg


def delivery_from_receipt(msg, episode_id: str) -> Delivery | None:
    """The online referee's filter (nodes/referee.py on_receipt): an observation,
    or an intervention the bridge delivered, of this episode."""
    if msg.episode_id != episode_id:
        return None
    t = stamp_to_s(msg.header.stamp)
    if msg.kind == "observation":
        return Delivery(msg.payload_id, t, msg.episode_id)
    if msg.kind == "intervention" and msg.status == "delivered":
        try:
            iv = json.loads(msg.detail_json or "{}").get("intervention")
        except (ValueError, AttributeError):
            iv = None
        if isinstance(iv, dict):
            return Delivery(msg.payload_id, t, msg.episode_id, intervention=iv)
    return None

