"""Verdicts from paired per-seed differences, shared by the embedded world's studies and the real-model study.

A comparison is judged on its per-seed differences ``d_s = x_arm - x_ref`` (``tagrpo.evaluation.stats``: mean,
Student-t interval, two-sided t-test against the claim's null). A row of the primary family has its p-value
Holm-adjusted with the others of that family; every other row is exploratory and judged on its own p.

- ``greater``: reproduced when the (adjusted) p is below ``ALPHA`` and the mean is above the null (0), refuted
  when it is below ``ALPHA`` and the mean below, else inconclusive; ``less``: the mirror image;
- ``matches`` (non-inferiority within ``MARGIN``): the same as ``greater`` against ``-MARGIN``.
"""

from __future__ import annotations

import math

from tagrpo.common.modes import check_mode
from tagrpo.evaluation.stats import holm

ALPHA = 0.05
KINDS = ("greater", "less", "matches")
MARGIN = 0.02  # non-inferiority margin of the "matches" claims, absolute (2 percentage points)


def null_of(kind: str, margin: float = MARGIN) -> float:
    """The value a claim's t-test is against: 0, or ``-margin`` for "matches"."""
    check_mode("kind", kind, KINDS)
    return -margin if kind == "matches" else 0.0


def verdict(mean_diff: float, p: float, kind: str, margin: float = MARGIN) -> str:
    """The verdict of a claim from its mean difference and its (adjusted) p-value against the claim's null."""
    null = null_of(kind, margin)
    if math.isnan(p) or p >= ALPHA:
        return "inconclusive"
    above = mean_diff > null
    return "reproduced" if above == (kind != "less") else "refuted"


def holm_and_verdicts(rows: list[dict], margin: float = MARGIN) -> list[dict]:
    """Rows with ``p``, ``mean``, ``kind`` and ``primary``: Holm-adjust the primary ones' p as one family
    (``p_holm``), then give every row its verdict (on ``p_holm`` where there is one; ``margin``: the null of a
    "matches" row is ``-margin``). Returns ``rows``."""
    primary = [r for r in rows if r["primary"]]
    for r, adjusted in zip(primary, holm([r["p"] for r in primary]), strict=True):
        r["p_holm"] = adjusted
    for r in rows:
        r["verdict"] = verdict(r["mean"], r.get("p_holm", r["p"]), r["kind"], margin)
    return rows
