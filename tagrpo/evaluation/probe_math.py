"""The arithmetic of ``tagrpo probe``, on correct counts alone: no model, no file (``tests/test_probe.py`` checks
each function on hand-worked counts).

A question's record holds ``n`` (samples per variant), ``q0`` (correct of q0's n) and ``rephrasings`` (correct of
each rephrasing's n). Its class:

- ``solved``: q0 all right; ``readable``: q0 mixed (GRPO already has a signal);
- ``hidden``: q0 all wrong and some rephrasing right (what pooling can rescue);
- ``unreachable``: q0 and every rephrasing all wrong.

The chance that G samples of one variant all get the same reward is estimated per question from its count ``c`` of
``n``: without replacement, ``C(c, G) / C(n, G)`` all right and ``C(n - c, G) / C(n, G)`` all wrong, an unbiased
estimate of ``p^G`` and ``(1 - p)^G`` when ``G <= n``; for ``G > n`` the plug-in ``(c/n)^G``, which overstates
uniform groups (the record says which, ``estimator``). Variants are sampled independently, so a pool's chances are
the products of its variants'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

CLASSES = ("solved", "readable", "hidden", "unreachable")


def classify(q0: int, rephrasings: Sequence[int], n: int) -> str:
    """The class of a question with ``q0`` of ``n`` right on q0 and ``rephrasings[i]`` of ``n`` on rephrasing i."""
    if q0 >= n:
        return "solved"
    if q0 > 0:
        return "readable"
    return "hidden" if any(c > 0 for c in rephrasings) else "unreachable"


def class_shares(records: Sequence[dict]) -> dict[str, float]:
    """Share of the records in each class (summing to 1; all 0 for no records)."""
    labels = [classify(r["q0"], r["rephrasings"], r["n"]) for r in records]
    return {c: (labels.count(c) / len(labels) if labels else 0.0) for c in CLASSES}


def estimator(n: int, g: int) -> str:
    return "hypergeometric" if g <= n else "plug-in"


def uniform_chances(c: int, n: int, g: int) -> tuple[float, float]:
    """``(P(G samples all right), P(G samples all wrong))`` for a variant with ``c`` of ``n`` right."""
    if g <= n:
        total = math.comb(n, g)
        return math.comb(c, g) / total, math.comb(n - c, g) / total
    p = c / n
    return p**g, (1 - p) ** g


def grpo_zero_signal(records: Sequence[dict], g: int) -> float:
    """GRPO's expected share of questions whose G samples of q0 all get the same reward (no advantage)."""
    if not records:
        return 0.0
    return float(np.mean([sum(uniform_chances(r["q0"], r["n"], g)) for r in records]))


def _pool(record: dict, num_rephrasings: int, g: int) -> tuple[float, float, float]:
    """``(P(pool all right), P(pool all wrong), P(q0 all wrong))`` of one question's pool: q0 and its first N
    rephrasings (fewer where it has fewer), G samples each."""
    variants = [record["q0"], *record["rephrasings"][:num_rephrasings]]  # (V,)
    chances = np.array([uniform_chances(c, record["n"], g) for c in variants])  # (V, 2)
    return float(chances[:, 0].prod()), float(chances[:, 1].prod()), float(chances[0, 1])


def pool_uniform(records: Sequence[dict], num_rephrasings: int, g: int) -> float:
    """TA-GRPO's expected share of pools (q0 and N rephrasings, G samples each) that stay uniform."""
    if not records:
        return 0.0
    return float(np.mean([sum(_pool(r, num_rephrasings, g)[:2]) for r in records]))


def rescued_from_all_wrong(records: Sequence[dict], num_rephrasings: int, g: int) -> float:
    """Expected share of questions whose q0 group of G is all wrong while their pool is mixed: the study's
    ``rescued from all-wrong`` (``tagrpo/rescued/from_zero``), predicted from the base model."""
    if not records:
        return 0.0
    pools = np.array([_pool(r, num_rephrasings, g) for r in records])  # (Q, 3)
    return float((pools[:, 2] - pools[:, 1]).mean())  # a pool all wrong has q0 all wrong


def rollouts(num_rephrasings: int, g: int, zero_signal: float) -> dict[str, float]:
    """Rollouts per question of each mode: GRPO G, TA-GRPO and equal-sampling GRPO (N+1)G, the adaptive modes
    G + U N G with U the share of uniform q0 groups (``history`` in the steady state, from the previous visit)."""
    adaptive = g + zero_signal * num_rephrasings * g
    return {"grpo": float(g), "ta_grpo": float((num_rephrasings + 1) * g),
            "equal_sampling": float((num_rephrasings + 1) * g), "adaptive": adaptive, "history": adaptive}


def per_type(records: Sequence[dict]) -> dict[str, dict]:
    """Per rephrasing type (``types`` of a record; its position ``rephrasing k`` where a record has none): the
    questions with one, its mean pass rate, q0's on the same questions and the mean shift (type minus q0, > 0:
    easier than q0) with a normal 95% interval over questions."""
    shifts: dict[str, list[tuple[float, float]]] = {}
    for r in records:
        types = r.get("types") or [f"rephrasing {i + 1}" for i in range(len(r["rephrasings"]))]
        for kind, c in zip(types, r["rephrasings"], strict=True):
            shifts.setdefault(kind, []).append((c / r["n"], r["q0"] / r["n"]))
    out = {}
    for kind, pairs in shifts.items():
        rates = np.array(pairs)  # (Q, 2): the type's rate, q0's
        diff = rates[:, 0] - rates[:, 1]  # (Q,)
        half = 1.96 * float(diff.std(ddof=1)) / math.sqrt(len(diff)) if len(diff) > 1 else float("nan")
        out[kind] = {"questions": len(diff), "pass_rate": float(rates[:, 0].mean()),
                     "q0_pass_rate": float(rates[:, 1].mean()), "shift": float(diff.mean()),
                     "shift_ci95": [float(diff.mean()) - half, float(diff.mean()) + half]}
    return out


def best_rephrasing_rates(records: Sequence[dict]) -> tuple[np.ndarray, np.ndarray]:
    """``(q0's pass rate, its best rephrasing's)`` per question, each (Q,)."""
    q0 = np.array([r["q0"] / r["n"] for r in records])  # (Q,)
    best = np.array([max(r["rephrasings"], default=0) / r["n"] for r in records])  # (Q,)
    return q0, best
