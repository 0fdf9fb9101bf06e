"""MT-SICS replies read as the reference manual writes them."""
from __future__ import annotations

import pytest

from labference_ros.devices import mt_sics


def test_weight_replies_carry_status_value_and_unit():
    stable = mt_sics.parse(b"S S     100.00 g\r\n", "S")
    assert (stable.status, stable.value_g, stable.ok) == ("S", 100.0, True)
    dynamic = mt_sics.parse("S D      99.87 g", "SI")  # SI answers with the S identifier
    assert (dynamic.command, dynamic.status, dynamic.value_g) == ("S", "D", 99.87)
    assert mt_sics.parse("S S    0.12345 kg", "S").value_g == pytest.approx(123.45)
    assert mt_sics.parse("T S      12.50 g", "T").value_g == 12.5
    assert mt_sics.format_weight("S", "S", 100.0) == "S S     100.00 g"


@pytest.mark.parametrize("line, status, meaning", [("S I", "I", "not executable"), ("S +", "+", "overload"),
                                                   ("S -", "-", "underload"), ("Z A", "A", "reply")])
def test_status_replies_without_a_value(line, status, meaning):
    reply = mt_sics.parse(line, line[0] if line[0] != "S" else "SI")
    assert reply.status == status and reply.value_g is None
    assert reply.ok is (status == "A")
    assert meaning in reply.describe()


@pytest.mark.parametrize("code", ["ES", "ET", "EL"])
def test_general_errors_answer_any_command(code):
    reply = mt_sics.parse(code + "\r\n", "SI")
    assert reply.error == code and not reply.ok
    assert code in reply.describe() and "error" in reply.describe()


@pytest.mark.parametrize("line", ["Z A", "S S 100.00", "S S abc g", "S S 100.00 lb", "S X 1.00 g", "", "S",
                                  "S S nan g", "S S inf g"])
def test_a_line_that_does_not_answer_the_command_is_refused_with_the_line(line):
    with pytest.raises(mt_sics.ReplyFormatError) as err:
        mt_sics.parse(line, "SI")
    assert repr(line) in str(err.value)


def test_commands_are_single_lines():
    assert mt_sics.encode("SI") == b"SI\r\n"
    with pytest.raises(ValueError):
        mt_sics.encode("SI\r\nZ")
