"""The pre-registered sequential paired test and the campaign plan, on synthetic outcome streams."""
import math

import numpy as np
import pytest

from labference_ros.core import sequential as S


def test_a_large_difference_stops_at_the_boundary_early():
    t = S.PairedSequentialTest(alpha=0.05, max_pairs=40)
    assert t.feed([(True, False)] * 40) == "boundary"
    # Jeffreys mixture: 2^7 B(7.5, 0.5) / B(0.5, 0.5) = 26.8 >= 20, while six units give 14.4.
    assert t.pairs == 7 and t.summary()["better"] == "candidate"
    assert t.e_value == pytest.approx(26.81, abs=0.01) and "e-value" in t.summary()["reason"]
    six = S.PairedSequentialTest(alpha=0.05, max_pairs=40)
    six.feed([(True, False)] * 6)
    assert six.status == "running" and six.e_value == pytest.approx(14.44, abs=0.01)


def test_no_difference_runs_to_its_maximum():
    rng = np.random.default_rng(240926)
    same = rng.random(60) < 0.6
    t = S.PairedSequentialTest(alpha=0.05, max_pairs=60)
    assert t.feed(zip(same, same)) == "max_reached" and t.pairs == 60 and t.discordant == 0
    assert t.e_value == 1.0 and "no difference established" in t.summary()["reason"]


def test_the_reference_can_be_the_better_arm():
    t = S.PairedSequentialTest(alpha=0.05, max_pairs=40)
    t.feed([(False, True), (True, True)] * 20)
    assert t.status == "boundary" and t.summary()["better"] == "reference"


def test_no_unit_counts_after_the_stop():
    t = S.PairedSequentialTest(alpha=0.05, max_pairs=3)
    t.feed([(True, True)] * 5)
    assert t.pairs == 3 and t.status == "max_reached"
    with pytest.raises(RuntimeError, match="stopped"):
        t.update(True, False)


@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_type_i_error_at_most_alpha_however_long_it_looks(alpha):
    for p in (0.2, 0.5, 0.9):
        op = S.sequential_operating(p, p, alpha, 500)
        assert op["reject_probability"] <= alpha


def test_exact_operating_characteristics_match_a_simulation():
    rng = np.random.default_rng(240926)
    p_c, p_r, n = 0.8, 0.4, 30
    exact = S.sequential_operating(p_c, p_r, 0.05, n)
    stops, lengths = 0, []
    for _ in range(3000):
        t = S.PairedSequentialTest(alpha=0.05, max_pairs=n)
        t.feed(zip(rng.random(n) < p_c, rng.random(n) < p_r))
        stops += t.status == "boundary"
        lengths.append(t.pairs)
    assert stops / 3000 == pytest.approx(exact["reject_probability"], abs=0.03)
    assert np.mean(lengths) == pytest.approx(exact["expected_pairs"], abs=0.6)


def test_plan_fixed_and_sequential_episodes():
    p = S.plan(0.5, 0.8, alpha=0.05, power=0.8)
    n = p["fixed"]["episodes_per_arm"]
    assert n == 46 and p["fixed"]["power"] >= 0.8 and S.fixed_power(0.8, 0.5, 0.05, n - 1) < 0.8
    seq = p["sequential"]
    assert seq["power"] >= 0.8 and S.sequential_operating(0.8, 0.5, 0.05, seq["max_episodes_per_arm"] - 1)[
        "reject_probability"] < 0.8
    assert seq["expected_episodes_per_arm_p1"] < n < seq["max_episodes_per_arm"]
    assert seq["type_i_error_at_p0"] <= 0.05
    width = p["interval"]
    assert width["episodes"] == n and 0.2 < width["expected_width"]["0.5"] <= width["worst_width"] < 0.3


def test_interval_width_shrinks_like_one_over_root_n():
    w10, w40 = S.interval_width(10, 0.5)["worst_width"], S.interval_width(40, 0.5)["worst_width"]
    assert w10 / w40 == pytest.approx(2.0, rel=0.15)
    assert S.interval_width(3, 1.0)["expected_width"]["1"] == pytest.approx(1 - 0.4385, abs=1e-3)


@pytest.mark.parametrize("args,word", [((0.5, 0.5), "equal"), ((1.2, 0.5), "p0"), ((0.5, 0.8, 1.5), "alpha")])
def test_plan_refuses_bad_input(args, word):
    with pytest.raises(ValueError, match=word):
        S.plan(*args)


def test_log_e_value_is_the_closed_form():
    assert math.exp(S.log_e_value(2, 1, 1.0)) == pytest.approx(4 * (1 / 6))
