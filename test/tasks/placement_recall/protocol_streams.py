"""Placement recall's measurement streams for the protocol conformance suite
(test/core/test_protocol_conformance.py): only what the family means by each
situation (which hole, seated or not, in the marked region or not); the suite
owns the expectations. Basic condition: one target, an empty rack that stays
put through the occlusion.

Every builder returns the referee after its stream; opened_while_held returns
(referee, the id of the opportunity that opened while the target was held)."""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from test_placement_referee import DT, LENGTH, Stream, _basic  # noqa: E402

from labference_ros.core.measurements import TABLE  # noqa: E402
from labference_ros.tasks.placement_recall.contract import RACK_OBJECT  # noqa: E402
from labference_ros.tasks.placement_recall.instances import RELEASE_REGION  # noqa: E402
from labference_ros.tasks.placement_recall.rack import hole_positions  # noqa: E402

HOLE = "B2"
OTHER_HOLE = "C4"


def let_go_on_table(s: Stream, xy, seconds: float = 1.2) -> None:
    s.closing, s.target_contacts = False, {TABLE}
    s.target = np.array([xy[0], xy[1], LENGTH / 2])
    s.tcp = s.target + [0.0, 0.0, 0.15]
    s.step(int(seconds / DT))


def place(s: Stream, hole: str = HOLE) -> None:
    s.observe()
    s.grasp_target()
    s.carry_target_down_into(hole)
    s.release_seated_in(hole)
    s.tcp = s.tcp + [0.0, 0.0, 0.1]
    s.step(5)


def occlude(s: Stream) -> None:
    s.turn_rack(0.0)
    s.step(2)
    s.observe()


def retrieve_from(s: Stream, hole: str = HOLE) -> None:
    s.hand_descends_over(hole_positions(s.contract.rack, s.pose)[hole][:2])
    s.grasp_target()
    s.target = s.target + [0.0, 0.0, 0.06]  # lifted out of its hole
    s.step(3, speed=0.1)
    s.observe()


def deliver(s: Stream) -> None:
    (cx, cy), _half = RELEASE_REGION
    let_go_on_table(s, (cx, cy), seconds=3.6)


def drop_after_correct_choice():
    s = Stream(_basic())
    s.step(2)
    s.observe()
    s.grasp_target()
    s.carry_target_down_into(HOLE)  # the choice: Insert(target, B2), legal
    let_go_on_table(s, (0.35, -0.3))  # dropped beside the rack
    place(s)  # the retry
    occlude(s)
    retrieve_from(s)
    deliver(s)
    return s.referee


def regrasp_within_window():
    s = Stream(_basic())
    s.step(2)
    s.observe()
    s.grasp_target()
    s.carry_target_down_into(HOLE)
    s.closing, s.target_contacts = False, set()  # let go above the hole, still falling
    s.step(8, speed=0.3)
    s.grasp_target()  # caught before it came to rest
    s.release_seated_in(HOLE)
    s.tcp = s.tcp + [0.0, 0.0, 0.1]
    s.step(5)
    occlude(s)
    retrieve_from(s)
    deliver(s)
    return s.referee


def slip():
    """The retrieved target slips out of the fingers back into its hole; the retry
    retrieves it again and delivers it."""
    s = Stream(_basic())
    s.step(2)
    place(s)
    occlude(s)
    retrieve_from(s)
    s.release_seated_in(HOLE)  # slipped back
    s.tcp = s.tcp + [0.0, 0.0, 0.1]
    s.step(5)
    s.observe()
    retrieve_from(s)
    deliver(s)
    return s.referee


def premature_advancement():
    """The target let go shallow in its hole (unfinished), and the hand goes on to a
    retrieval approach."""
    s = Stream(_basic())
    s.step(2)
    s.observe()
    s.grasp_target()
    s.carry_target_down_into(HOLE)
    s.closing, s.target_contacts = False, {RACK_OBJECT}
    s.target = s._seated(HOLE) + [0.0, 0.0, 0.025]  # let go shallow: caught in the guides, not seated
    s.tcp = s.target + [0.0, 0.0, 0.15]
    s.step(40)
    s.hand_descends_over(hole_positions(s.contract.rack, s.pose)[OTHER_HOLE][:2])
    return s.referee


def wrong_then_corrected():
    s = Stream(_basic())
    s.step(2)
    place(s)
    occlude(s)
    s.hand_descends_over(hole_positions(s.contract.rack, s.pose)[OTHER_HOLE][:2])  # the wrong hole first
    retrieve_from(s)
    deliver(s)
    return s.referee


def release_outside_region():
    s = Stream(_basic())
    s.step(2)
    place(s)
    occlude(s)
    retrieve_from(s)
    (cx, cy), (hx, hy) = RELEASE_REGION
    let_go_on_table(s, (cx + hx + 0.05, cy), seconds=1.5)  # on the table, beside the marked region
    return s.referee


def completed():
    s = Stream(_basic())
    s.step(2)
    place(s)
    occlude(s)
    retrieve_from(s)
    deliver(s)
    return s.referee


def opened_while_held():
    s = Stream(_basic())
    s.step(2)
    s.grasp_target()  # no observation delivered yet: nothing is open
    opened = s.referee.deliver_observation("held", round(s.t, 6))[0]
    s.carry_target_down_into(HOLE)
    s.release_seated_in(HOLE)
    return s.referee, opened["opportunity_id"]
