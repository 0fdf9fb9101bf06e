"""Feedback weighing's measurement streams for the protocol conformance suite
(test/core/test_protocol_conformance.py): only what the family means by each
situation (which standard, on the pan or not); the suite owns the expectations.

Every builder returns the referee after its stream; opened_while_held returns
(referee, the id of the opportunity that opened while the object was held)."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "core"))

from referee_streams import episode, instance  # noqa: E402


def _basic():
    ref, w = episode()  # 180 g target, 130 g sample: std_50 is the one legal addition
    w.run(0.3)
    return ref, w


def complete(w) -> None:
    w.run(4.0)


def drop_after_correct_choice():
    ref, w = _basic()
    w.grasp("std_50")
    w.run(0.2)
    w.put("std_50", "floor")  # let go away from the pan: it falls and lies still
    w.move("std_50", "pan")  # the retry
    complete(w)
    return ref


def regrasp_within_window():
    ref, w = _basic()
    w.grasp("std_50")
    w.run(0.2)
    w.release("std_50")  # the fingers open in the air ...
    w.moving["std_50"] = w.t + 1.0
    w.run(0.2)
    w.grasp("std_50")  # ... and catch it before it came to rest anywhere
    w.put("std_50", "pan")
    complete(w)
    return ref


def slip():
    ref, w = _basic()
    w.grasp("std_50")
    w.run(0.2)
    w.put("std_50", "table", settle_s=0.15)  # slips out of the fingers back onto the table
    w.grasp("std_50")
    w.run(0.2)
    w.put("std_50", "pan")
    complete(w)
    return ref


def premature_advancement():
    inst = instance(220, 100, ("std_20", "std_100"), start=("std_50",), condition="extended")
    ref, w = episode(inst)
    w.run(0.3)
    w.grasp("std_50")
    w.run(0.2)
    w.put("std_50", "table", settle_s=0.3)  # released; its confirmation still pending
    w.grasp("std_100")
    w.run(0.5)
    return ref


def wrong_then_corrected():
    ref, w = _basic()
    w.move("std_10", "pan")  # a wrong first choice, carried out
    w.move("std_10", "table")  # corrected
    w.move("std_50", "pan")
    complete(w)
    return ref


def release_outside_region():
    ref, w = _basic()
    w.move("std_50", "table")  # let go beside the balance, never on the pan
    w.run(1.0)
    return ref


def completed():
    ref, w = _basic()
    w.move("std_50", "pan")
    complete(w)
    return ref


def opened_while_held():
    inst = instance(220, 100, ("std_20", "std_100"), start=("std_50",), condition="extended")
    ref, w = episode(inst)
    w.run(0.3)
    w.move("std_100", "pan", settle_s=0.2)
    w.grasp("std_20", hold_s=1.5)  # std_100's confirmation opens the next opportunity meanwhile
    held = ref.opportunities[-1]
    w.put("std_20", "pan")
    return ref, held.id
