"""Response diversity: lexical (distinct n-grams) and embedding-based (mean pairwise cosine distance)."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def distinct_ngrams(texts: Sequence[str], n: int = 2, unit: str = "word") -> float:
    """Distinct n-grams / all n-grams over ``texts`` (0 for no n-gram at all); ``unit`` is 'word' or 'char'."""
    if unit not in ("word", "char"):
        raise ValueError(f"unit={unit!r} is not valid; expected one of: 'word', 'char'")
    grams = []
    for text in texts:
        tokens = text.split() if unit == "word" else list(text)
        grams.extend(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return len(set(grams)) / len(grams) if grams else 0.0


def mean_pairwise_cosine_distance(embeddings: torch.Tensor) -> float:
    """Mean of 1 - cos(e_i, e_j) over pairs i < j of (S, D) embeddings; 0 for fewer than two."""
    s = embeddings.size(0)
    if s < 2:
        return 0.0
    unit = torch.nn.functional.normalize(embeddings.double(), dim=-1)  # (S, D)
    cos = unit @ unit.T  # (S, S)
    upper = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)  # (S, S)
    return float((1.0 - cos[upper]).mean())


def lexical_diversity(responses: list[list[str]], n: int = 2, unit: str = "char") -> float:
    """Mean over questions of the distinct-n share among that question's responses."""
    scores = [distinct_ngrams(rs, n, unit) for rs in responses if rs]
    return sum(scores) / len(scores) if scores else 0.0
