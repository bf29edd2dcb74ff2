"""The end-to-end tier's reward: mixed 0/1 rewards from an untrained model's responses.

An untrained tiny model never writes a right answer, and a constant reward gives zero advantages, which would prove
nothing about the pools. This reward is 1 when the response's characters sum to an odd number, so pools hold both.
"""

from __future__ import annotations


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> float:
    return float(sum(map(ord, solution_str)) % 2)
