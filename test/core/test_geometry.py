"""Eq. 2 localization errors: known answers, and invalid predictions never score 0."""
import math

import numpy as np
import pytest

from labference_ros.core.geometry import balance_mismatch, body_axis, clip_unit, geometry_errors, sensed_balance_xy


def test_position_and_axis_errors_have_known_values():
    e = geometry_errors([0.5, 0.13, 0.03], [0, 0, 2.0], [0.5, 0.1, 0.03], [0, 0, 1])
    assert e.valid and e.e_p == pytest.approx(0.03) and e.e_v == pytest.approx(0.0)
    tilted = geometry_errors([0.5, 0.1, 0.03], [1, 0, 1], [0.5, 0.1, 0.03], [0, 0, 1])
    assert tilted.e_p == 0.0 and tilted.e_v == pytest.approx(math.pi / 4)
    flipped = geometry_errors([0.5, 0.1, 0.03], [0, 0, -1], [0.5, 0.1, 0.03], [0, 0, 1])
    assert flipped.e_v == pytest.approx(math.pi)  # a directed axis: upside down is the worst case


@pytest.mark.parametrize("p,v,reason", [([0, 0, 0], [0, 0, 1], "zero_position"),
                                        ([0.5, 0.1, 0.03], [0, 0, 0], "zero_axis"),
                                        ([math.nan, 0.1, 0.03], [0, 0, 1], "non_finite_prediction"),
                                        ([0.5, 0.1, 0.03], [0, math.inf, 1], "non_finite_prediction"),
                                        ([0.5, 0.1], [0, 0, 1], "not_a_3_vector"),
                                        ("here", [0, 0, 1], "not_a_3_vector")])
def test_zero_or_non_finite_predictions_are_invalid_outputs(p, v, reason):
    e = geometry_errors(p, v, [0.5, 0.1, 0.03], [0, 0, 1])
    assert not e.valid and e.reason == reason and e.e_p is None and e.e_v is None


def test_body_axis_of_a_quaternion():
    assert body_axis((1, 0, 0, 0)) == pytest.approx((0, 0, 1))
    s = math.sqrt(0.5)  # 90 degrees about x: the body's z points along -y
    assert body_axis((s, s, 0, 0)) == pytest.approx((0, -1, 0))


@pytest.mark.parametrize("value", [0.5, -0.25, 1.0, -1.0, 1.0 + 1e-15, -1.0 - 1e-15, 3.0, -7.0, math.inf, -math.inf,
                                   np.float64(0.75), np.float64(1.5)])
def test_clip_unit_is_numpys_clip_to_the_unit_interval(value):
    assert clip_unit(value) == float(np.clip(value, -1.0, 1.0))
    assert type(clip_unit(value)) is float


def test_clip_unit_keeps_nan_as_numpy_does():
    assert math.isnan(clip_unit(math.nan)) and math.isnan(float(np.clip(math.nan, -1.0, 1.0)))


def test_the_balance_is_placed_by_its_marker_and_a_misplaced_one_is_named():
    # Seen straight: the pan centre is where the marker puts it.
    assert sensed_balance_xy((0.5, 0.1, 0.065), 0.065, None) == (0.5, 0.1)
    # Seen by one camera with its depth 5 cm short: slid along the viewing ray to the pan's height.
    camera = (1.0, 0.0, 1.15)
    true_pan = (0.5, 0.1, 0.065)
    short = tuple(camera[i] + 0.95 * (true_pan[i] - camera[i]) for i in range(3))
    assert sensed_balance_xy(short, 0.065, camera) == pytest.approx((0.5, 0.1), abs=1e-9)
    assert balance_mismatch((0.504, 0.1), (0.5, 0.1), 0.01) is None
    said = balance_mismatch((0.53, 0.1), (0.5, 0.1), 0.01)
    assert said == ("balance: its marker puts the pan at (0.530, 0.100), the instance at (0.500, 0.100): "
                    "30 mm off (tolerance 10 mm)")
