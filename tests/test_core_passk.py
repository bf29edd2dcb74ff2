"""The unbiased pass@k estimator (tagrpo.core.passk) against the exact closed form."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from tagrpo.core import pass_at_k

TRIPLES = [(n, c, k) for n in range(1, 11) for c in range(n + 1) for k in range(1, n + 1)]


def exact(n, c, k):
    """1 - C(n-c, k) / C(n, k) in exact rational arithmetic (math.comb(m, k) = 0 for k > m)."""
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


@pytest.mark.parametrize(("n", "c", "k"), TRIPLES)
def test_matches_closed_form_scalar(n, c, k):
    out = pass_at_k(n, c, k)
    assert isinstance(out, np.ndarray) and out.shape == () and out.dtype == np.float64
    assert abs(float(out) - exact(n, c, k)) <= 1e-12


def test_matches_closed_form_vectorised():
    n, c, k = np.array(TRIPLES).T
    out = pass_at_k(n, c, k)
    assert out.shape == (len(TRIPLES),) and out.dtype == np.float64
    expected = np.array([exact(*t) for t in TRIPLES])
    np.testing.assert_allclose(out, expected, rtol=0.0, atol=1e-12)


def test_hand_worked_mixed_n():
    # n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10 = 0.7
    # n=10, c=0, k=2: no correct sample -> 0
    # n=3, c=3, k=1: every sample correct -> 1
    # n=4, c=1, k=1: 1 - C(3,1)/C(4,1) = 1/4
    # n=8, c=2, k=4: 1 - C(6,4)/C(8,4) = 1 - 15/70 = 11/14
    out = pass_at_k([5, 10, 3, 4, 8], [2, 0, 3, 1, 2], [2, 2, 1, 1, 4])
    np.testing.assert_allclose(out, [0.7, 0.0, 1.0, 0.25, 11 / 14], rtol=0.0, atol=1e-12)


def test_scalar_k_broadcasts_over_problems():
    # k=2: n=4, c=1: 1 - C(3,2)/C(4,2) = 1 - 3/6 = 0.5; n=6, c=2: 1 - C(4,2)/C(6,2) = 1 - 6/15 = 0.6
    out = pass_at_k(np.array([4, 6]), np.array([1, 2]), 2)
    np.testing.assert_allclose(out, [0.5, 0.6], rtol=0.0, atol=1e-12)


def test_k_array_over_one_problem():
    # n=4, c=1: k=1 -> 1/4; k=2 -> 1/2; k=3 -> 1 - C(3,3)/C(4,3) = 3/4; k=4 -> 1 (n - c = 3 < 4).
    out = pass_at_k(4, 1, np.array([1, 2, 3, 4]))
    np.testing.assert_allclose(out, [0.25, 0.5, 0.75, 1.0], rtol=0.0, atol=1e-12)
    assert out[3] == 1.0


@pytest.mark.parametrize(("n", "c", "k"), [(10, 8, 3), (10, 10, 1), (1024, 1000, 32), (5000, 4990, 11)])
def test_exactly_one_when_fewer_wrong_than_k(n, c, k):
    assert pass_at_k(n, c, k) == 1.0


@pytest.mark.parametrize(("n", "k"), [(1, 1), (10, 5), (1024, 32), (5000, 5000)])
def test_exactly_zero_without_correct_samples(n, k):
    assert pass_at_k(n, 0, k) == 0.0


def test_large_n_matches_product_formula():
    # C(n-c, k) / C(n, k) = C(n-k, c) / C(n, c) = prod_{i=n-c+1}^{n} (i - k) / i = prod (1 - k/i).
    n, c, k = 1024, 3, 32
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    out = float(pass_at_k(n, c, k))
    assert math.isfinite(out)
    assert abs(out - (1.0 - prod)) <= 1e-11
    assert abs(out - exact(n, c, k)) <= 1e-11  # ~0.0909


def test_very_large_n_stays_finite_and_in_range():
    out = pass_at_k(np.array([4096, 10000, 10000]), np.array([1, 5000, 9901]), np.array([64, 100, 100]))
    assert np.all(np.isfinite(out)) and np.all((out >= 0.0) & (out <= 1.0))
    # n=4096, c=1: C(4095, 64) / C(4096, 64) = (4096 - 64) / 4096 -> pass@64 = 64/4096 = 1/64.
    assert abs(out[0] - 1 / 64) <= 1e-11
    assert out[2] == 1.0  # 99 wrong samples < k = 100


def test_boundary_n_minus_c_equal_k_is_not_one():
    # n - c == k: exactly one all-wrong draw, 1 - 1/C(n,k). n=4, c=2, k=2 -> 1 - 1/6 = 5/6.
    assert abs(float(pass_at_k(4, 2, 2)) - 5 / 6) <= 1e-12
    assert float(pass_at_k(4, 2, 2)) < 1.0


@pytest.mark.parametrize(
    ("n", "c", "k", "match"),
    [
        (3, 1, 4, "k <= n"),  # k > n
        (3, 1, 0, "1 <= k"),  # k < 1
        (3, 4, 1, "c <= n"),  # c > n
        (3, -1, 1, "0 <= c"),  # c < 0
        ([3, 5], [1, 1], [2, 6], "k <= n"),  # one bad problem in an array
    ],
)
def test_invalid_arguments(n, c, k, match):
    with pytest.raises(ValueError, match=match):
        pass_at_k(n, c, k)
