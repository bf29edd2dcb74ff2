"""Score completions with each prompt's shared tokens run through the model once (``TAGRPOConfig.share_prompt_prefix``).

TRL scores ``[left-padded prompt | completion]`` rows: each of the R rows of a chunk runs its whole prompt through
the model again, in the old log-prob forward, the policy forward and its backward (and the reference's). In a
pool, and in every GRPO group, many rows hold the same prompt (anchored to q0, a chunk of TA-GRPO's 16 rows holds
2 distinct prompts), and the distinct prompts begin alike (a chat template's header, an instruction, a worked
example). Here the tokens every distinct prompt of a chunk begins with run once, then each distinct prompt's rest
once, all but its last token (``tagrpo.generation.shared_prefix_cache``); the key/value cache is selected out to
the rows, and each row runs only ``[last prompt token | completion]`` against it, with the head TRL's fused one
(``fused_lm_head``). Every token keeps its position in its own prompt, so that under rotary position embeddings the
log-probs are TRL's up to float rounding (``tests/test_prefix_sharing.py`` compares them, and the gradients, with
TRL's own on tiny Llama and Qwen3 models in fp32), from fewer tokens; gradients reach the prompt's tokens through
the selected cache. It needs the cache, so no gradient checkpointing (``TAGRPOConfig`` refuses the pair), and one
forward per backward is what DDP and FSDP expect, so one process (``TAGRPOTrainer`` refuses more).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import torch

from tagrpo.generation import distinct_rows, shared_prefix_cache


def shared_prompt_scores(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int,
                         compute_entropy: bool, autocast: Callable[[], AbstractContextManager]):
    """``(logps, entropies)`` of the last ``logits_to_keep`` columns of one chunk: (R, T) each (entropies None
    unless asked for), as TRL's ``_get_per_token_logps_and_entropies`` gives them for the (R, P + T) ``input_ids``
    and ``attention_mask``, or None when every prompt is one token long. ``autocast`` makes the trainer's autocast
    context (``accelerator.autocast``)."""
    t = logits_to_keep
    p = input_ids.size(1) - t
    first, inverse = distinct_rows(input_ids[:, :p], attention_mask[:, :p])  # (U,), (R,)
    with autocast():
        built = shared_prefix_cache(model, input_ids[first, :p], attention_mask[first, :p])
    if built is None:
        return None
    rows = built.select(inverse)  # gradients reach the prompts through the selected cache
    tail = input_ids[:, p - 1 :]  # (R, 1 + T): the last prompt token, then the completion
    tail_mask = attention_mask[:, p - 1 :]  # (R, 1 + T)
    labels = tail.masked_fill(tail_mask == 0, -100)  # (R, 1 + T)
    labels[:, 0] = -100
    positions = rows.length.unsqueeze(1) - 1 + torch.arange(t + 1, device=tail.device)  # (R, 1 + T)
    with autocast():
        out = model(input_ids=tail, attention_mask=torch.cat([rows.mask, tail_mask], 1), position_ids=positions,
                    labels=labels, fused_lm_head=True, **{rows.keyword: rows.cache})
    entropies = out.entropy[:, -t:] if compute_entropy else None  # (R, T)
    return out.log_probs[:, -t:], entropies  # (R, T)
