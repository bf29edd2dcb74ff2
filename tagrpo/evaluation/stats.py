"""Statistics over seeds for verdicts: Student-t intervals and tests, Holm's correction, equivalence (TOST).

Every function takes the per-seed values of one paired difference (arm minus reference, same seed) or p-values,
and returns numbers; the verdict code of the embedded world and of the real-model study both use these.

- :func:`interval`: mean and the Student-t interval (95% by default).
- :func:`t_test`: two-sided p-value of ``mean == null``.
- :func:`welch`: the difference of two independent means (unpaired samples, unequal variances): Welch's interval
  and two-sided p.
- :func:`seeds_for_half_width`: the seeds a paired difference needs for a target half-width, at the spread seen.
- :func:`holm`: Holm's step-down adjusted p-values of a family (controls the family-wise error rate).
- :func:`equivalence`: two one-sided tests (TOST) of ``|mean| < margin``: both one-sided p-values and their max,
  which is below ``alpha`` exactly when the ``1 - 2*alpha`` interval lies inside ``(-margin, margin)``.
"""

from __future__ import annotations

import math
from statistics import mean, stdev

from scipy.stats import t as student_t


def _se(values: list[float]) -> float:
    return stdev(values) / math.sqrt(len(values))


def interval(values: list[float], level: float = 0.95) -> dict:
    """``{"mean", "lo", "hi", "n"}``: the Student-t ``level`` interval of the mean (NaN bounds below two values)."""
    n = len(values)
    m = mean(values) if values else math.nan
    if n < 2:
        return {"mean": m, "lo": math.nan, "hi": math.nan, "n": n}
    half = student_t.ppf(0.5 + level / 2, n - 1) * _se(values)
    return {"mean": m, "lo": m - half, "hi": m + half, "n": n}


def t_test(values: list[float], null: float = 0.0) -> float:
    """Two-sided one-sample t-test p-value of ``mean(values) == null``; NaN below two values, and for zero spread
    1.0 at the null and 0.0 elsewhere."""
    if len(values) < 2:
        return math.nan
    se = _se(values)
    diff = mean(values) - null
    if se == 0:
        return 1.0 if diff == 0 else 0.0
    return float(2 * student_t.sf(abs(diff) / se, len(values) - 1))


def welch(a: list[float], b: list[float], level: float = 0.95) -> dict:
    """``{"mean", "lo", "hi", "n", "p"}`` of ``mean(a) - mean(b)`` for independent samples: Welch-Satterthwaite
    degrees of freedom, Student-t interval and two-sided p; ``n`` is ``len(a) + len(b)``; NaN below two of each."""
    n = len(a) + len(b)
    if len(a) < 2 or len(b) < 2:
        m = mean(a) - mean(b) if a and b else math.nan
        return {"mean": m, "lo": math.nan, "hi": math.nan, "n": n, "p": math.nan}
    va, vb = stdev(a) ** 2 / len(a), stdev(b) ** 2 / len(b)
    m, se = mean(a) - mean(b), math.sqrt(va + vb)
    if se == 0:
        return {"mean": m, "lo": m, "hi": m, "n": n, "p": 1.0 if m == 0 else 0.0}
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = student_t.ppf(0.5 + level / 2, df) * se
    return {"mean": m, "lo": m - half, "hi": m + half, "n": n, "p": float(2 * student_t.sf(abs(m) / se, df))}


def seeds_for_half_width(half: float, n: int, target: float, level: float = 0.95) -> int:
    """The smallest seed count whose Student-t ``level`` half-width is at most ``target``, for the standard deviation
    implied by ``half`` at ``n`` seeds (each count with its own t quantile, not the one of ``n``)."""
    sd = half * math.sqrt(n) / student_t.ppf(0.5 + level / 2, n - 1)
    m = 2
    while student_t.ppf(0.5 + level / 2, m - 1) * sd / math.sqrt(m) > target:
        m += 1
    return m


def holm(pvalues: list[float]) -> list[float]:
    """Holm's adjusted p-values, in the input order: the i-th smallest of m becomes ``max_{j<=i} (m-j+1) p_(j)``,
    capped at 1. NaN p-values (claims without an interval) stay NaN and do not count in m."""
    order = sorted((p, i) for i, p in enumerate(pvalues) if not math.isnan(p))
    m = len(order)
    adjusted = [math.nan] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def equivalence(values: list[float], margin: float) -> dict:
    """TOST of ``-margin < mean < margin``: ``{"p_lower", "p_upper", "p"}`` with ``p = max`` of the two one-sided
    p-values (H0 ``mean <= -margin`` and H0 ``mean >= margin``); NaN below two values."""
    if len(values) < 2:
        return {"p_lower": math.nan, "p_upper": math.nan, "p": math.nan}
    se, m, df = _se(values), mean(values), len(values) - 1
    if se == 0:
        inside = -margin < m < margin
        return {"p_lower": 0.0 if inside else 1.0, "p_upper": 0.0 if inside else 1.0, "p": 0.0 if inside else 1.0}
    p_lower = float(student_t.sf((m + margin) / se, df))
    p_upper = float(student_t.sf((margin - m) / se, df))
    return {"p_lower": p_lower, "p_upper": p_upper, "p": max(p_lower, p_upper)}
