"""Score completions with each distinct prompt run through the model once (``TAGRPOConfig.share_prompt_prefix``).

TRL scores ``[left-padded prompt | completion]`` rows: each of the R rows of a chunk runs its whole prompt through
the model again, in the old log-prob forward, the policy forward and its backward (and the reference's). In a
pool, and in every GRPO group, many rows hold the same prompt: anchored to q0, a chunk of TA-GRPO's 16 rows holds
2 distinct prompts. Here each distinct prompt of a chunk (its padded columns as TRL has them) runs once with its
key/value cache kept, all but its last column; the cache is selected out to the rows, and each row runs only
``[last prompt column | completion]`` against it. The positions are TRL's (a column's index: the cache continues
them), the attention mask TRL's, the head TRL's fused one (``fused_lm_head``): the same log-probs, up to the
float rounding of another batch shape (``tests/test_prefix_sharing.py`` compares them, and the gradients, with
TRL's own on a tiny model in fp32), from fewer tokens. Gradients reach the prompt's tokens through the selected
cache. It needs the cache, so no gradient checkpointing (``TAGRPOConfig`` refuses the pair), and one forward per
backward is what DDP and FSDP expect, so one process (``TAGRPOTrainer`` refuses more).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import torch

from tagrpo.generation import distinct_rows


def shared_prompt_scores(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int,
                         compute_entropy: bool, autocast: Callable[[], AbstractContextManager]):
    """``(logps, entropies)`` of the last ``logits_to_keep`` columns of one chunk: (R, T) each (entropies None
    unless asked for), as TRL's ``_get_per_token_logps_and_entropies`` gives them for the (R, P + T) ``input_ids``
    and ``attention_mask``. ``autocast`` makes the trainer's autocast context (``accelerator.autocast``)."""
    t = logits_to_keep
    p = input_ids.size(1) - t
    first, inverse = distinct_rows(input_ids[:, :p], attention_mask[:, :p])  # (U,), (R,)
    head_ids = input_ids[first, : p - 1]  # (U, P - 1)
    head_mask = attention_mask[first, : p - 1]  # (U, P - 1)
    with autocast():
        head = model(input_ids=head_ids, attention_mask=head_mask, use_cache=True, logits_to_keep=1)
    name = "cache" if "cache" in type(head).__dataclass_fields__ else "past_key_values"
    cache = getattr(head, name)
    cache.batch_select_indices(inverse)  # (R, heads, P - 1, d) per layer: gradients reach the prompts
    tail = input_ids[:, p - 1 :]  # (R, 1 + T)
    labels = tail.masked_fill(attention_mask[:, p - 1 :] == 0, -100)  # (R, 1 + T)
    labels[:, 0] = -100
    with autocast():
        out = model(input_ids=tail, attention_mask=attention_mask, labels=labels, fused_lm_head=True, **{name: cache})
    entropies = out.entropy[:, -t:] if compute_entropy else None  # (R, T)
    return out.log_probs[:, -t:], entropies  # (R, T)
