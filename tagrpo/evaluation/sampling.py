"""Scoring sampled responses into pass@k; the sampling itself is :mod:`tagrpo.generation`'s (re-exported here)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from tagrpo.core import pass_at_k
from tagrpo.generation import generate_batch, sample_responses

__all__ = ["correct_counts", "generate_batch", "pass_at_k_curve", "sample_responses"]


def correct_counts(responses: list[list[str]], answers: Sequence, is_correct: Callable[[str, str], bool]) -> np.ndarray:
    """(Q,) number of correct responses per question."""
    return np.array([sum(is_correct(r, a) for r in rs) for rs, a in zip(responses, answers, strict=True)])


def pass_at_k_curve(counts: np.ndarray, n, ks: Sequence[int]) -> dict[str, float]:
    """Mean unbiased pass@k over questions for every k in ``ks``, keyed by ``str(k)`` (as JSON stores it).

    ``n`` is the samples per question, an int or a (Q,) array; a k above the smallest n is left out.
    """
    n = np.broadcast_to(np.asarray(n), np.shape(counts))  # (Q,)
    if not n.size:
        return {}
    return {str(k): float(pass_at_k(n, counts, k).mean()) for k in ks if k <= n.min()}
