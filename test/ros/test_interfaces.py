"""Every labference msg/srv constructs, serializes and deserializes to an equal value."""
from __future__ import annotations

import importlib
import pathlib

import pytest
from rclpy.serialization import deserialize_message, serialize_message

REPO = pathlib.Path(__file__).resolve().parents[2]
MSG_NAMES = sorted(p.stem for p in (REPO / "msg").glob("*.msg"))
SRV_NAMES = sorted(p.stem for p in (REPO / "srv").glob("*.srv"))


def _fill(msg, depth: int = 0):
    """Set every field of ``msg`` to a distinctive non-default value."""
    for i, (name, kind) in enumerate(msg.get_fields_and_field_types().items()):
        value = getattr(msg, name)
        if kind == "string":
            setattr(msg, name, f"{name}-{i}-é")
        elif kind == "boolean":
            setattr(msg, name, True)
        elif kind in ("double", "float"):
            setattr(msg, name, 0.5 + i)
        elif kind.startswith(("int", "uint")):
            setattr(msg, name, 3 + i)
        elif kind.startswith("sequence<double"):
            setattr(msg, name, [1.25, -2.5, 3.0 + i])
        elif kind.startswith("sequence<string"):
            setattr(msg, name, ["a", f"b{i}"])
        elif kind.startswith("sequence<uint8"):  # serialized bytes
            setattr(msg, name, bytes([0, 1, 255, i]))
        elif kind.startswith("sequence<"):
            inner = type(msg).SLOT_TYPES[i].value_type
            pkg, _, cls = (inner.namespaces[0], None, inner.name)
            element = getattr(importlib.import_module(f"{pkg}.msg"), cls)()
            _fill(element, depth + 1)
            setattr(msg, name, [element, element])
        elif hasattr(value, "get_fields_and_field_types"):
            _fill(value, depth + 1)
        else:
            raise AssertionError(f"unhandled field type {kind} in {type(msg).__name__}.{name}")
    return msg


def test_every_interface_file_is_tested():
    assert len(MSG_NAMES) >= 12 and len(SRV_NAMES) >= 5


@pytest.mark.parametrize("name", MSG_NAMES)
def test_message_round_trip(name):
    cls = getattr(importlib.import_module("labference.msg"), name)
    original = _fill(cls())
    assert original != cls(), "filling must change the message, or the test proves nothing"
    data = serialize_message(original)
    assert deserialize_message(data, cls) == original


@pytest.mark.parametrize("name", SRV_NAMES)
def test_service_round_trip(name):
    srv = getattr(importlib.import_module("labference.srv"), name)
    for cls in (srv.Request, srv.Response):
        original = _fill(cls())
        assert deserialize_message(serialize_message(original), cls) == original


def test_operation_constants_name_the_weighing_vocabulary():
    from labference.msg import Intervention, Operation

    assert {Operation.TYPE_ADD, Operation.TYPE_REMOVE, Operation.TYPE_WAIT, Operation.TYPE_STOP} == {
        "add", "remove", "wait", "stop"}
    assert (Intervention.MODE_ASSIST, Intervention.MODE_REPLACE) == (0, 1)
