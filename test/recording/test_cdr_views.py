"""The audit's direct CDR readers give what rclpy's deserialization gives."""
from __future__ import annotations

import pytest
from rclpy.serialization import deserialize_message, serialize_message

from labference.msg import BalanceReading, ObjectState, WorldState
from labference_ros.msgconv import balance_from_msg, world_from_msg
from labference_ros.recording import cdr_views


def _world(n_objects: int, text: str) -> WorldState:
    msg = WorldState()
    msg.header.stamp.sec, msg.header.stamp.nanosec = 12, 345_678_901
    msg.header.frame_id = "world" + text
    for i in range(n_objects):
        o = ObjectState()
        o.name, o.kind, o.supported_by = f"std_{i}{text}", "standard" if i % 2 else "sample", "pan" * i
        o.pose.position.x, o.pose.position.y, o.pose.position.z = 0.1 * i, -0.2, 0.3 + i
        o.pose.orientation.w, o.pose.orientation.x, o.pose.orientation.y, o.pose.orientation.z = 1.0, 0.01, 0.02, -0.5 * i
        o.twist.linear.x, o.twist.linear.y, o.twist.linear.z = 0.5, 0.25 * i, -0.125
        o.twist.angular.x, o.twist.angular.y, o.twist.angular.z = 3.0, 0.0, 1e-9 * i
        o.left_finger_contact, o.right_finger_contact = bool(i % 2), bool(i % 3)
        o.contacts = [f"c{j}" * (j + 1) for j in range(i)]
        msg.objects.append(o)
    msg.gripper_width, msg.gripper_closing, msg.hand_on_pan = 0.0421, True, bool(len(text) % 2)
    msg.pan_contacts = ["std_1", text] if text else []
    msg.environment_json = f'{{"transition": {{"id": "{text}"}}}}' if text else ""
    return msg


@pytest.mark.parametrize("n_objects", [0, 1, 5])
@pytest.mark.parametrize("text", ["", "x", "éé", "abcdefg"])  # string lengths that shift the alignment
def test_world_state_reads_as_rclpy_reads_it(n_objects, text):
    data = serialize_message(_world(n_objects, text))
    ours, theirs = cdr_views.world_state(data), deserialize_message(data, WorldState)
    assert world_from_msg(ours) == world_from_msg(theirs)
    assert world_from_msg(ours).environment == world_from_msg(theirs).environment
    assert (world_from_msg(ours).environment is None) == (not text)
    assert ours.hand_on_pan == theirs.hand_on_pan and ours.header.frame_id == theirs.header.frame_id
    for a, b in zip(ours.objects, theirs.objects):
        assert (a.supported_by, a.left_finger_contact, a.right_finger_contact) == \
            (b.supported_by, b.left_finger_contact, b.right_finger_contact)
        assert tuple(a.twist.linear) == (b.twist.linear.x, b.twist.linear.y, b.twist.linear.z)


@pytest.mark.parametrize("reason,source", [("", "sim_load_cell"), ("missing wrench", "mt_sics:/dev/ttyUSB0")])
def test_balance_reading_reads_as_rclpy_reads_it(reason, source):
    msg = BalanceReading()
    msg.header.stamp.sec, msg.header.stamp.nanosec = 3, 20_000_000
    msg.raw_g, msg.filtered_g, msg.displayed_g = 20.0031, 19.998, 20.0
    msg.stable, msg.overload, msg.valid, msg.invalid_reason, msg.source = True, False, not reason, reason, source
    data = serialize_message(msg)
    ours, theirs = cdr_views.balance_reading(data), deserialize_message(data, BalanceReading)
    assert balance_from_msg(ours) == balance_from_msg(theirs) and ours.source == theirs.source
    assert (ours.header.stamp.sec, ours.header.stamp.nanosec) == (3, 20_000_000)


def test_a_cut_payload_is_an_error_not_a_wrong_value():
    data = serialize_message(_world(3, "ab"))
    with pytest.raises(Exception):
        cdr_views.world_state(data[:len(data) // 2])


def test_a_world_state_recorded_before_environment_json_still_reads():
    msg = _world(2, "")
    data = serialize_message(msg)
    assert data[-5:] == b"\x01\x00\x00\x00\x00"  # the empty environment_json: uint32 length 1 and the NUL
    older = data[:-5]
    view = cdr_views.world_state(older)
    assert view.environment_json == "" and world_from_msg(view) == world_from_msg(msg)
