"""Adaptive pools: a question's rephrasings are sampled only when its own G samples of q0 say nothing.

``pool_mode="adaptive"`` (in-step) decides from this step's samples of q0:

Within one step, phase 1 generates G samples of q0 for every question and scores them; phase 2 generates G
samples of each rephrasing for the questions whose q0 group is uniform (all right or all wrong:
``tagrpo.core.uniform_groups``). The layout of the batch stays TRL's, (N+1)*G rows per question: a row that was
not generated holds one EOS token, no loss (its completion mask is 0), and reward NaN, so the question is
normalised over the rows it has (its q0 group alone, or its whole pool) and the row's advantage is 0. A step
spends ``B*G + U*N*G`` rollouts for B questions of which U were uniform; the rows never generated still pass
through the loss's forward pass (masked), which costs compute but no generation.

``pool_mode="history"`` decides from the question's previous visit instead, with one generation call per step:
a question is expanded when its q0 group was uniform the last time it was drawn, or when it has not been drawn
yet (``history_choice``); its q0 group of this step then updates the record. Rows, rewards and rollouts are laid
out and counted as above.
"""

from __future__ import annotations

import torch

from tagrpo.trainer.seam import Generation


def phase_rows(variant_index: torch.Tensor) -> list[int]:
    """Local row indices of q0's samples, generated first."""
    return (variant_index == 0).nonzero().flatten().tolist()


def expansion_rows(variant_index: torch.Tensor, uniform: torch.Tensor, pool: int) -> list[int]:
    """Local row indices of the rephrasings of uniform questions (``uniform`` is (B_local,), pools are local)."""
    question = torch.arange(len(variant_index)) // pool  # (R,)
    keep = (variant_index > 0) & uniform[question]  # (R,)
    return keep.nonzero().flatten().tolist()


def history_choice(keys: list[str], last_uniform: dict[str, bool]) -> torch.Tensor:
    """(B,) bool: expand question ``b`` (id ``keys[b]``) when its q0 group was uniform at its last visit or it has
    none yet."""
    return torch.tensor([last_uniform.get(k, True) for k in keys], dtype=torch.bool)  # (B,)


def merge(parts: list[tuple[list[int], Generation]], rows: int, empty_completion, eos_id: int) -> Generation:
    """One ``Generation`` for ``rows`` rows from the generations of row subsets; other rows are placeholders.

    ``parts`` holds ``(row indices, generation of those rows)`` pairs.
    """
    prompt_ids, completion_ids = [[] for _ in range(rows)], [[eos_id] for _ in range(rows)]
    completions, logprobs = [empty_completion] * rows, None
    for indices, part in parts:
        if part.uses_extras():
            raise NotImplementedError("adaptive pools support neither tools, environments nor images")
        if part.logprobs is not None and logprobs is None:
            logprobs = [[0.0] for _ in range(rows)]
        for k, i in enumerate(indices):
            prompt_ids[i], completion_ids[i] = part.prompt_ids[k], part.completion_ids[k]
            completions[i] = part.completions[k]
            if part.logprobs is not None:
                logprobs[i] = part.logprobs[k]
    return Generation(prompt_ids, completion_ids, None, completions, logprobs, {}, None, [])
