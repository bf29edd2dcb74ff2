"""tagrpo.evaluation.stats against values worked by hand (df = 2 has a closed form: sf(t) = (1 - t/sqrt(t^2+2))/2)."""

from __future__ import annotations

import math

import pytest

from tagrpo.evaluation.stats import equivalence, holm, interval, t_test


def sf_df2(t: float) -> float:
    return (1 - t / math.sqrt(t * t + 2)) / 2


def test_interval_of_three_values():
    # mean 2, sd 1, se 1/sqrt(3); t(0.975, 2) = 4.302653
    out = interval([1.0, 2.0, 3.0])
    half = 4.302653 / math.sqrt(3)
    assert out["n"] == 3 and out["mean"] == 2.0
    assert out["lo"] == pytest.approx(2 - half, abs=1e-5) and out["hi"] == pytest.approx(2 + half, abs=1e-5)


def test_interval_needs_two_values():
    out = interval([0.3])
    assert out["mean"] == 0.3 and math.isnan(out["lo"]) and math.isnan(out["hi"])


def test_t_test_two_sided():
    # t = 2 / (1/sqrt(3)) = sqrt(12): p = 2 * sf = 1 - sqrt(12)/sqrt(14)
    assert t_test([1.0, 2.0, 3.0]) == pytest.approx(1 - math.sqrt(12 / 14), rel=1e-9)
    assert t_test([1.0, 2.0, 3.0], null=2.0) == pytest.approx(1.0)
    assert t_test([0.5, 0.5]) == 0.0 and t_test([0.0, 0.0]) == 1.0 and math.isnan(t_test([1.0]))


def test_holm_by_hand():
    # sorted 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04, raised to the running 0.06)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])  # capped at 1


def test_holm_leaves_nan_out_of_the_family():
    out = holm([0.02, math.nan, 0.01])
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.02)


def test_equivalence_inside_and_outside_the_margin():
    values = [0.0, 0.01, -0.01]  # mean 0, se 0.01/sqrt(3)
    inside = equivalence(values, margin=0.02)  # t = 0.02 / se = sqrt(12)
    assert inside["p"] == pytest.approx(sf_df2(math.sqrt(12)), rel=1e-9) and inside["p"] < 0.05
    outside = equivalence(values, margin=0.01)  # t = sqrt(3): p = 0.1127
    assert outside["p"] == pytest.approx(sf_df2(math.sqrt(3)), rel=1e-9) and outside["p"] > 0.05


def test_equivalence_is_the_worse_of_two_one_sided_tests():
    out = equivalence([0.01, 0.02, 0.03], margin=0.04)  # mean 0.02, se 0.01/sqrt(3)
    assert out["p_lower"] == pytest.approx(sf_df2(0.06 / (0.01 / math.sqrt(3))), rel=1e-9)
    assert out["p_upper"] == pytest.approx(sf_df2(0.02 / (0.01 / math.sqrt(3))), rel=1e-9)
    assert out["p"] == out["p_upper"]


def test_welch_by_hand():
    # a = [1, 3]: mean 2, variance 2, se^2 = 1; b = [0, 0, 0]: se^2 = 0. df = 1^2 / (1^2 / 1) = 1, t(0.975, 1) =
    # 12.706: 2 +- 12.706; p = 2 * P(T_1 > 2) = 1 - 2 atan(2) / pi = 0.2952
    from tagrpo.evaluation.stats import welch

    r = welch([1.0, 3.0], [0.0, 0.0, 0.0])
    assert r["mean"] == 2.0 and r["n"] == 5
    assert abs(r["lo"] - (2 - 12.7062)) < 1e-3 and abs(r["hi"] - (2 + 12.7062)) < 1e-3
    assert abs(r["p"] - (1 - 2 * math.atan(2) / math.pi)) < 1e-9
    assert math.isnan(welch([1.0], [0.0, 1.0])["lo"])  # below two values on a side: no interval


def test_welch_is_antisymmetric():
    from tagrpo.evaluation.stats import welch

    a, b = [0.1, 0.4, 0.3], [0.0, -0.2, 0.1, 0.05]
    ab, ba = welch(a, b), welch(b, a)
    assert abs(ab["mean"] + ba["mean"]) < 1e-12 and abs(ab["lo"] + ba["hi"]) < 1e-12 and ab["p"] == ba["p"]


def test_seeds_for_half_width_by_hand():
    # half 8 pp at 5 seeds: sd = 0.08 sqrt(5) / t(0.975, 4) = 0.08 x 2.2361 / 2.7764 = 0.06443. 12 seeds: t(11)
    # 2.2010 x 0.06443 / 3.4641 = 0.04094 > 0.04; 13 seeds: 2.1788 x 0.06443 / 3.6056 = 0.03893: 13 (the fixed-t
    # rule n (half / target)^2 would say 20)
    from tagrpo.evaluation.stats import seeds_for_half_width

    assert seeds_for_half_width(0.08, 5, 0.04) == 13
    assert seeds_for_half_width(0.124, 10, 0.04) == 75  # v1's widest primary interval (issue 32: "about 75")
    assert seeds_for_half_width(0.03, 10, 0.04) <= 10  # already inside the target
