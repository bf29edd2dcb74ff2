"""Evaluation: unbiased pass@k, response diversity; the sampling (:mod:`tagrpo.generation`) is re-exported."""

from tagrpo.evaluation.diversity import distinct_ngrams, lexical_diversity, mean_pairwise_cosine_distance
from tagrpo.evaluation.sampling import correct_counts, pass_at_k_curve
from tagrpo.generation import sample_responses

__all__ = [
    "correct_counts",
    "distinct_ngrams",
    "lexical_diversity",
    "mean_pairwise_cosine_distance",
    "pass_at_k_curve",
    "sample_responses",
]
