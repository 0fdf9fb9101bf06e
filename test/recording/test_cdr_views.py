"""The audit's direct CDR readers give what rclpy's deserialization gives."""
from __future__ import annotations

import struct

import pytest
from rclpy.serialization import deserialize_message, serialize_message

from labference.msg import BalanceReading, ObjectState, WorldState
from labference_ros.msgconv import balance_from_msg, world_from_msg
from labference_ros import cdr_views


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
    with pytest.raises((ValueError, struct.error)):
        cdr_views.world_state(data[:len(data) // 2])


def test_a_world_state_recorded_before_environment_json_still_reads():
    msg = _world(2, "")
    data = serialize_message(msg)
    assert data[-5:] == b"\x01\x00\x00\x00\x00"  # the empty environment_json: uint32 length 1 and the NUL
    older = data[:-5]
    view = cdr_views.world_state(older)
    assert view.environment_json == "" and world_from_msg(view) == world_from_msg(msg)


def _stream() -> list[bytes]:
    """World states whose shape changes and comes back: new contacts, a renamed object
    of the same length, an environment record, then the first shape again."""
    shapes = [(3, ""), (3, ""), (3, "x"), (2, ""), (3, "y"), (3, ""), (3, "abcdefg"), (3, "")]
    out = []
    for step, (n, text) in enumerate(shapes):
        msg = _world(n, text)
        msg.header.stamp.sec, msg.header.stamp.nanosec = step, 10_000_000 * step + 1
        msg.objects[0].pose.position.x = 0.001 * step  # numbers change every time
        msg.objects[-1].twist.linear.z = -0.5 * step
        msg.gripper_closing = bool(step % 2)
        out.append(serialize_message(msg))
    return out


def test_the_stream_decoder_gives_what_world_from_msg_gives_for_every_shape():
    decoder = cdr_views.WorldStateDecoder()
    for data in _stream() * 2:  # the second pass reads every shape from a learnt layout
        expected = world_from_msg(deserialize_message(data, WorldState))
        got = decoder(data)
        assert got == expected
        assert got.environment == expected.environment
        assert list(got.objects) == list(expected.objects)


def test_the_stream_decoder_ignores_padding_but_not_names():
    decoder = cdr_views.WorldStateDecoder()
    first = _world(3, "")
    data = bytearray(serialize_message(first))
    decoder(bytes(data))
    # Writers leave stale memory in alignment gaps: the same message with other padding.
    spans: list = []
    cdr_views.world_state(bytes(data), spans)
    gaps = [(start, int(codes[:-1])) for start, codes, n in spans if codes.endswith("x")]
    assert gaps
    for start, n in gaps:
        data[start:start + n] = b"\xab" * n
    assert decoder(bytes(data)) == world_from_msg(first)
    # A message of the same size whose object is named differently is not read as the first.
    renamed = _world(3, "")
    renamed.objects[1].name = "std_9"  # same length as std_1
    data = serialize_message(renamed)
    assert len(data) == len(serialize_message(first))
    assert set(decoder(data).objects) == {"std_0", "std_9", "std_2"}


def test_the_balance_stream_decoder_matches_balance_from_msg():
    decoder = cdr_views.BalanceReadingDecoder()
    for step, reason in enumerate(["", "", "missing wrench", "", "overload"]):
        msg = BalanceReading()
        msg.header.stamp.sec, msg.header.stamp.nanosec = step, 20_000_000
        msg.raw_g, msg.filtered_g, msg.displayed_g = 20.0 + step, 19.9, 20.0
        msg.stable, msg.overload, msg.valid, msg.invalid_reason = bool(step % 2), step == 4, not reason, reason
        data = serialize_message(msg)
        t, reading = decoder(data)
        assert t == step + 0.02 and reading == balance_from_msg(deserialize_message(data, BalanceReading))


def test_a_cut_payload_is_an_error_in_the_stream_decoder_too():
    decoder = cdr_views.WorldStateDecoder()
    data = serialize_message(_world(3, "ab"))
    decoder(data)
    with pytest.raises((ValueError, struct.error)):
        decoder(data[:len(data) // 2])


def test_the_stamp_is_read_from_the_bytes_of_any_message_that_starts_with_one():
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import Image, JointState

    image = Image(height=2, width=3, encoding="rgb8", step=9, data=bytes(range(18)))
    image.header.stamp.sec, image.header.stamp.nanosec = 7, 250_000_000
    joints = JointState(name=["a"], position=[0.5])
    joints.header.stamp.sec, joints.header.stamp.nanosec = 0, 20_000_000
    clock = Clock()
    clock.clock.sec, clock.clock.nanosec = 12, 1
    assert cdr_views.header_stamp_s(serialize_message(image)) == 7.25
    assert cdr_views.header_stamp_s(serialize_message(joints)) == 0.02
    assert cdr_views.header_stamp_s(serialize_message(clock)) == 12 + 1e-9


def _measurements():
    """World measurements of one shape with changing numbers, then other shapes and back."""
    from labference_ros.core.measurements import ObjectMeasurement, WorldMeasurement

    def world(step: int, contacts=("table",), pan=(), environment=None):
        objects = {name: ObjectMeasurement(name, kind, (0.1 * i + 0.001 * step, -0.2, 0.3), (0.99, 0.01, -0.02, 0.1),
                                           0.5 * step, 1e-6 * i, contacts if i else ("left_finger", "right_finger"))
                   for i, (name, kind) in enumerate((("std_10", "standard"), ("sample", "sample"),
                                                     ("std_2", "standard")))}
        return WorldMeasurement(t=0.01 * step + 1e-12, objects=objects, gripper_width=0.04 - 1e-4 * step,
                                gripper_closing=bool(step % 2), pan_contacts=pan, environment=environment)

    return ([world(k) for k in range(4)] + [world(4, contacts=("pan", "std_2"), pan=("sample",))]
            + [world(5, environment={"transition": {"id": 3}})] + [world(k) for k in range(6, 9)])


def _without_padding(data: bytes) -> bytes:
    spans: list = []
    cdr_views.world_state(data, spans)
    kept = bytearray(data)
    for start, codes, _n in spans:
        if codes.endswith("x"):
            kept[start:start + int(codes[:-1])] = b"\0" * int(codes[:-1])
    return bytes(kept)


def test_the_encoder_gives_what_rclpy_serializes_from_fill_world_msg():
    from labference_ros.msgconv import fill_world_msg

    supports = {"std_10": "table", "sample": "pan"}

    def reference(m, labels):
        return serialize_message(fill_world_msg(WorldState(), m, ObjectState, labels))

    def reference_with_stale_gaps(m, labels):
        # What a serializer that leaves its memory in the alignment gaps may give.
        data = bytearray(reference(m, labels))
        spans = []
        cdr_views.world_state(bytes(data), spans)
        for start, codes, _n in spans:
            if codes.endswith("x"):
                data[start:start + int(codes[:-1])] = b"\xab" * int(codes[:-1])
        return bytes(data)

    encoder = cdr_views.WorldStateEncoder(reference_with_stale_gaps)
    for m in _measurements() * 2:  # the second pass packs every shape into a learnt layout
        data, expected = encoder(m, supports), reference(m, supports)
        assert deserialize_message(data, WorldState) == deserialize_message(expected, WorldState)
        # The same bytes, alignment gaps zeroed: equal measurements, equal bytes in every run.
        assert data == _without_padding(expected)
        assert cdr_views.WorldStateDecoder()(data) == world_from_msg(fill_world_msg(WorldState(), m, ObjectState,
                                                                                   supports))
    relabelled = encoder(_measurements()[0], {"std_10": "pan"})  # a new support label is a new shape
    labels = {o.name: o.supported_by for o in deserialize_message(relabelled, WorldState).objects}
    assert labels == {"sample": "", "std_10": "pan", "std_2": ""}


def test_undecodable_bytes_are_a_reason_not_an_exception():
    decoder = cdr_views.WorldStateDecoder()
    good = serialize_message(_world(2, ""))
    huge = _world(2, "")
    huge.objects[0].twist.linear.x = 1e200  # squaring it overflows the referee's arithmetic
    for data in (good[:10], b"not cdr", serialize_message(huge)):
        value, why = cdr_views.decoded_or_reason(decoder, data)
        assert value is None and why
    value, why = cdr_views.decoded_or_reason(decoder, good)
    assert value == world_from_msg(_world(2, "")) and why == ""
