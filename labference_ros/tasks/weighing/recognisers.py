"""Recognisers over WorldMeasurement streams (paper 5.3, 8.2).

Two layers with separate thresholds:
- instantaneous views of one measurement (support by pan/table from contacts,
  robot touch, bilateral grasp, hand pressure, reading eligibility);
- per-object trackers that turn the stream into grasp / release / placement
  recognitions (loose thresholds) and confirmed support events (strict ones).
"""
from __future__ import annotations

import functools
import operator
from dataclasses import dataclass

from labference_ros.tasks.weighing.contract import TaskContract
from labference_ros.core.measurements import (BALANCE_BODY, LEFT_FINGER, PAN, RIGHT_FINGER, ROBOT_PARTS, TABLE,
                                             ObjectMeasurement, WorldMeasurement, frozen_instance)
from labference_ros.tasks.weighing.task_state import ELSEWHERE, ConfirmedEvent


# Instantaneous support classes (robot contact is tracked separately).
S_PAN, S_TABLE, S_AMBIGUOUS, S_BODY, S_NONE = PAN, TABLE, "ambiguous", BALANCE_BODY, "none"


def support_classes(m: WorldMeasurement) -> dict[str, str]:
    """Which surface carries each object, from contacts; stacked objects inherit.

    Touching the pan together with the table or the balance body (a weight
    leaning on the rim) is ambiguous: a shallow placement never counts as pan support.
    """
    return dict(_contact_facts(tuple(m.objects), tuple(map(_contacts_of, m.objects.values())), m.pan_contacts)[0])


def _supports(contacts: tuple[tuple[str, tuple[str, ...]], ...], pan_contacts: tuple[str, ...]) -> dict[str, str]:
    """support_classes from each object's (name, contacts), in the measurement's order."""
    direct: dict[str, str] = {}
    stacked: dict[str, tuple[str, ...]] = {}
    names = {name for name, _ in contacts}
    for name, cs in contacts:  # a few names each: a tuple is searched faster than a set is built
        on_pan = PAN in cs or name in pan_contacts
        on_table, on_body = TABLE in cs, BALANCE_BODY in cs
        if on_pan:
            direct[name] = S_AMBIGUOUS if (on_table or on_body) else S_PAN
        elif on_table:
            direct[name] = S_AMBIGUOUS if on_body else S_TABLE
        elif on_body:
            direct[name] = S_BODY
        else:
            others = tuple(c for c in cs if c in names and c != name)
            if others:
                stacked[name] = others
            else:
                direct[name] = S_NONE
    # Resolve stacks: an object resting only on others inherits their common support.
    while stacked:
        progressed = False
        for name, others in list(stacked.items()):
            if all(o in direct for o in others):
                known = {direct[o] for o in others}
                direct[name] = known.pop() if len(known) == 1 else S_AMBIGUOUS
                del stacked[name]
                progressed = True
        if not progressed:
            break
    for name in stacked:  # cycles of objects touching only each other
        direct[name] = S_NONE
    return direct


def location_of(support: str) -> str:
    """Map an instantaneous support class to a task-state location."""
    if support in (S_PAN, S_TABLE):
        return support
    return ELSEWHERE


def touches_location(m: WorldMeasurement, name: str, location: str) -> bool:
    """The object has a direct contact with the surface of a task location (the pan
    or the table), whatever else it touches: a re-seat leaning on the rim still
    touches the pan."""
    o = m.objects.get(name)
    if o is None:
        return False
    if location == S_PAN:
        return PAN in o.contacts or name in m.pan_contacts
    if location == S_TABLE:
        return TABLE in o.contacts
    return False


@dataclass(frozen=True)
class MeasurementView:
    """Derived facts of one measurement, shared by all trackers and predicates."""

    t: float
    support: dict
    touched: frozenset  # objects any robot part touches
    held: str | None  # the one object in a closing bilateral grasp, else None
    hand_pressure: bool
    reading_eligible: bool
    stable_eligible: bool
    displayed_g: float | None
    invalid_reason: str
    # Robot contact on a reading that would otherwise be eligible (valid, no
    # overload, stable): the contact, not a settling load, is what spoils it.
    contact_affects_reading: bool = False
    on_pan: frozenset = frozenset()  # objects the pan alone carries (support S_PAN)
    loading_pan: frozenset = frozenset()  # objects the pan carries, alone or leaning on the rim (S_AMBIGUOUS)


_contacts_of = operator.attrgetter("contacts")


@functools.lru_cache(maxsize=256)
def _contact_facts(names: tuple[str, ...], contacts: tuple[tuple[str, ...], ...], pan_contacts: tuple[str, ...]):
    """(support classes, objects a robot part touches, objects in bilateral finger
    contact, objects on the pan, objects loading the pan) of one contact configuration.
    An episode holds a few dozen configurations over thousands of measurements, so each
    is worked out once; the support dict is shared by the views of that configuration
    and only ever read."""
    touched, bilateral = [], []
    pairs = tuple(zip(names, contacts))
    for name, cs in pairs:
        if not ROBOT_PARTS.isdisjoint(cs):  # a robot part touches it; a bilateral grasp touches too
            touched.append(name)
            if LEFT_FINGER in cs and RIGHT_FINGER in cs:
                bilateral.append(name)
    support = _supports(pairs, pan_contacts)
    on_pan = frozenset(n for n, s in support.items() if s == S_PAN)
    loading_pan = on_pan | {n for n, s in support.items() if s == S_AMBIGUOUS}
    return support, frozenset(touched), tuple(bilateral), on_pan, loading_pan


def view_of(m: WorldMeasurement) -> MeasurementView:
    objects = m.objects
    support, touched, bilateral, on_pan, loading_pan = _contact_facts(
        tuple(objects), tuple(map(_contacts_of, objects.values())), m.pan_contacts)
    held = bilateral[0] if (m.gripper_closing and len(bilateral) == 1) else None
    # Pressing the pan, or touching anything resting on it, loads the pan through the hand.
    hand_pressure = m.hand_on_pan or not loading_pan.isdisjoint(touched)
    b = m.balance
    reason = ""
    if b is None:
        reason = "no_reading"
    elif not b.valid:
        reason = b.invalid_reason or "invalid"
    elif b.overload:
        reason = "overload"
    elif hand_pressure:
        reason = "hand_pressure"
    eligible = reason == ""
    # frozen_instance: one view per measurement, several fields.
    return frozen_instance(MeasurementView, {
        "t": m.t, "support": support, "touched": touched, "held": held,
        "hand_pressure": hand_pressure, "reading_eligible": eligible,
        "stable_eligible": eligible and bool(b and b.stable),
        "displayed_g": b.displayed_g if b is not None else None, "invalid_reason": reason,
        "contact_affects_reading": reason == "hand_pressure" and b.stable,
        "on_pan": on_pan, "loading_pan": loading_pan,
    })


def still(o: ObjectMeasurement, linear: float, angular: float) -> bool:
    return o.linear_speed <= linear and o.angular_speed <= angular


class ObjectTracker:
    """Grasp, release, placement and confirmation of one object."""

    def __init__(self, name: str, contract: TaskContract):
        self.name = name
        self.rec = contract.recognisers
        self.conf = contract.confirmation
        self.grasp_since: float | None = None
        self.grasping = False
        self.release_since: float | None = None
        self.attempt = 0
        self.pending_attempt = False  # grasped since the last confirmation
        self.placed_recognised = False
        self.placed_support = ""
        self.cand_loc: str | None = None
        self.cand_since = 0.0

    def step(self, v: MeasurementView, o: ObjectMeasurement, confirmed_loc: str):
        """Returns (recognitions, confirmed event or None). Recognitions are dicts."""
        out: list[dict] = []
        t = v.t
        # Grasp: closing bilateral contact with this object alone, held grasp_hold_s.
        if v.held == self.name:
            if self.grasp_since is None:
                self.grasp_since = t
            if not self.grasping and t - self.grasp_since >= self.rec.grasp_hold_s - 1e-9:
                self.grasping, self.release_since = True, None
                self.attempt += 1
                self.pending_attempt, self.placed_recognised = True, False
                out.append({"category": "grasp", "t": t, "object": self.name, "attempt": self.attempt,
                            "from": confirmed_loc})
        else:
            self.grasp_since = None
        touched = self.name in v.touched
        # Release: no robot contact for release_hold_s after a recognised grasp.
        if self.grasping:
            if touched:
                self.release_since = None
            else:
                if self.release_since is None:
                    self.release_since = t
                if t - self.release_since >= self.rec.release_hold_s - 1e-9:
                    self.grasping = False
                    out.append({"category": "release", "t": t, "object": self.name, "attempt": self.attempt,
                                "support": v.support.get(self.name, S_NONE)})
        support = v.support.get(self.name, S_NONE)
        # Placement (loose): released after an attempt, resting on a surface.
        if (self.pending_attempt and not self.grasping and not touched and not self.placed_recognised
                and support in (S_PAN, S_TABLE, S_AMBIGUOUS, S_BODY)
                and still(o, self.rec.low_motion_linear_mps, self.rec.low_motion_angular_rps)):
            self.placed_recognised, self.placed_support = True, support
            out.append({"category": "placement_recognised", "t": t, "object": self.name,
                        "attempt": self.attempt, "support": support})
        # Confirmation (strict): released, still, same support for dwell_s, stable eligible reading.
        loc = location_of(support)
        ok = not touched and not self.grasping and still(o, self.conf.linear_mps, self.conf.angular_rps)
        if not ok:
            self.cand_loc = None
            return out, None
        if loc != self.cand_loc:
            self.cand_loc, self.cand_since = loc, t
        if t - self.cand_since < self.conf.dwell_s - 1e-9:
            return out, None
        if loc == confirmed_loc and not self.pending_attempt:
            return out, None
        if self.conf.require_stable_reading and not v.stable_eligible:
            return out, None
        after = self.pending_attempt
        self.pending_attempt = False
        return out, ConfirmedEvent(kind="support", t=t, object=self.name, location=loc,
                                   measured_g=v.displayed_g, attempt=self.attempt, after_attempt=after)
