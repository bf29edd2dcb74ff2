"""Evaluation: unbiased pass@k, response diversity; the sampling (:mod:`tagrpo.generation`) is re-exported.

The names below load on first use (they need torch), so that importing a submodule (``tagrpo eval --help`` reads
``tagrpo.evaluation.run``'s settings) does not load torch."""

from __future__ import annotations

import importlib

_SOURCES = {
    "correct_counts": "tagrpo.evaluation.sampling",
    "distinct_ngrams": "tagrpo.evaluation.diversity",
    "lexical_diversity": "tagrpo.evaluation.diversity",
    "mean_pairwise_cosine_distance": "tagrpo.evaluation.diversity",
    "pass_at_k_curve": "tagrpo.evaluation.sampling",
    "sample_responses": "tagrpo.generation",
}

__all__ = sorted(_SOURCES)


def __getattr__(name: str):
    if name not in _SOURCES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_SOURCES[name]), name)
    globals()[name] = value
    return value
