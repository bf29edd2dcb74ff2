"""Evaluation: sampling, unbiased pass@k, response diversity."""

from tagrpo.evaluation.diversity import distinct_ngrams, lexical_diversity, mean_pairwise_cosine_distance
from tagrpo.evaluation.sampling import correct_counts, pass_at_k_curve, sample_responses

__all__ = [
    "correct_counts",
    "distinct_ngrams",
    "lexical_diversity",
    "mean_pairwise_cosine_distance",
    "pass_at_k_curve",
    "sample_responses",
]
