"""Measurements built by core.measurements.frozen_instance (the referee's and the
audit's per-measurement builders) are the instances the dataclass constructors give:
every field set, nothing else, equal, equally hashed (where hashable) and still frozen."""
from __future__ import annotations

import dataclasses
import math

import pytest

from labference_ros.core.measurements import BalanceMeasurement, ObjectMeasurement, WorldMeasurement
from labference_ros.msgconv import balance_measurement, object_measurement, world_measurement
from labference_ros.tasks.weighing.recognisers import MeasurementView, view_of


def _same_instance(built, constructed):
    names = {f.name for f in dataclasses.fields(type(constructed))}
    assert set(vars(built)) == names  # no field missing, none misspelt
    assert type(built) is type(constructed)
    assert built == constructed and repr(built) == repr(constructed)
    if not any(isinstance(v, dict) for v in vars(constructed).values()):  # a dict field makes it unhashable
        assert hash(built) == hash(constructed)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.t = 1.0


def _object():
    return object_measurement("std_10", "standard", 0.1, 0.2, 0.3, 0.0, 0.0, 0.6, 0.8, 3.0, 4.0, 0.0,
                              0.0, 0.0, 2.0, ("pan", "left_finger"))


def test_object_balance_and_world_builders_match_the_constructors():
    _same_instance(_object(), ObjectMeasurement("std_10", "standard", (0.1, 0.2, 0.3), (0.8, 0.0, 0.0, 0.6),
                                                5.0, 2.0, ("pan", "left_finger")))
    b = balance_measurement(1.0, 2.0, 3.0, True, False, True, "")
    _same_instance(b, BalanceMeasurement(1.0, 2.0, 3.0, True, False, True, ""))
    w = world_measurement(0.25, {"std_10": _object()}, 0.03, True, ("std_10",), '{"transition": {"id": 2}}', b)
    constructed = WorldMeasurement(t=0.25, objects={"std_10": _object()}, gripper_width=0.03, gripper_closing=True,
                                   pan_contacts=("std_10",), balance=b, environment={"transition": {"id": 2}})
    _same_instance(w, constructed)
    assert w.environment == constructed.environment  # not part of equality, so checked apart
    _same_instance(w.with_balance(None), dataclasses.replace(constructed, balance=None))


@pytest.mark.parametrize("balance", [None, BalanceMeasurement(0.0, 0.0, 10.0, True),
                                     BalanceMeasurement(0.0, 0.0, math.nan, False, valid=False,
                                                        invalid_reason="settling")])
@pytest.mark.parametrize("closing", [False, True])
def test_the_measurement_view_matches_its_constructor(balance, closing):
    held = ObjectMeasurement("std_10", "standard", (0.0, 0.0, 0.1), (1.0, 0.0, 0.0, 0.0), 0.0, 0.0,
                             ("left_finger", "right_finger"))
    loaded = ObjectMeasurement("std_20", "standard", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0), 0.0, 0.0,
                               ("pan", "robot"))
    m = WorldMeasurement(t=1.5, objects={"std_10": held, "std_20": loaded}, gripper_closing=closing,
                         balance=balance)
    v = view_of(m)
    fields = {f.name: getattr(v, f.name) for f in dataclasses.fields(MeasurementView)}
    _same_instance(v, MeasurementView(**fields))
    assert v.touched == {"std_10", "std_20"} and v.held == ("std_10" if closing else None)
    assert v.hand_pressure  # std_20 rests on the pan and the robot touches it
