"""Anchoring in verl's padded layout: every row's sequence rebuilt as ``[q0's prompt | the row's response]``.

verl stores a generated row as ``prompts`` (R, P) left-padded, ``responses`` (R, T) right-padded, ``input_ids``
= ``[prompts | responses]`` (R, P+T), ``attention_mask`` (R, P+T) and ``position_ids`` =
``clip(cumsum(attention_mask) - 1, 0)`` (``verl.utils.model.compute_position_id_with_mask``). The old, reference
and current log-probs are all computed from ``input_ids`` / ``attention_mask`` / ``position_ids`` and gathered at
the response positions, so replacing the prompt part is all that ``anchor="original"`` needs.

q0's prompt tokens are taken from a row of the same pool that variant 0 generated: they are exactly what verl's
agent loop tokenized for q0 (chat template included), with no second tokenization. ``responses`` and
``response_mask`` are never touched. Nothing here imports verl.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch

from tagrpo.integrations.verl.expand import split_uid


class AnchoredRows(NamedTuple):
    """``prompts`` (R, P'), ``input_ids`` / ``attention_mask`` / ``position_ids`` (R, P'+T)."""

    prompts: torch.Tensor
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor


def position_ids_from_mask(mask: torch.Tensor) -> torch.Tensor:
    """verl's position ids for a 0/1 ``mask`` (..., L): ``clip(cumsum(mask) - 1, min=0)``."""
    return torch.clip(torch.cumsum(mask, dim=-1) - 1, min=0)


def left_pad(ids: torch.Tensor, mask: torch.Tensor, width: int, pad_token_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Re-left-pad left-padded ``ids`` / ``mask`` (R, P) to (R, ``width``); raises if a row has more tokens."""
    lengths = mask.sum(-1)  # (R,)
    if lengths.numel() and int(lengths.max()) > width:
        raise ValueError(f"a prompt has {int(lengths.max())} tokens, more than the width {width}")
    p = ids.size(1)
    if width >= p:
        pad = width - p
        new_ids = torch.nn.functional.pad(ids, (pad, 0), value=pad_token_id)  # (R, P)
        new_mask = torch.nn.functional.pad(mask, (pad, 0), value=0)  # (R, P)
    else:
        cut = p - width
        if bool(mask[:, :cut].any()):
            raise ValueError(f"cannot cut {cut} columns: a prompt token lies in them (is the prompt left-padded?)")
        new_ids, new_mask = ids[:, cut:], mask[:, cut:]
    return new_ids.masked_fill(new_mask == 0, pad_token_id), new_mask


def anchor_rows(
    q0_prompt_ids: torch.Tensor,
    q0_prompt_mask: torch.Tensor,
    responses: torch.Tensor,
    response_attention: torch.Tensor,
    pad_token_id: int = 0,
    prompt_width: int | None = None,
) -> AnchoredRows:
    """Rebuild every row as q0's left-padded prompt followed by the row's unchanged response.

    Args:
        q0_prompt_ids: (R, P0) left-padded token ids of q0's prompt for each row.
        q0_prompt_mask: (R, P0) 1 for prompt tokens, 0 for left padding.
        responses: (R, T) the row's response tokens, right-padded.
        response_attention: (R, T) the response part of the row's attention mask.
        pad_token_id: id written into padding positions.
        prompt_width: width P' of the prompt part (default P0; verl keeps ``rollout.prompt_length``).

    Returns:
        AnchoredRows with ``input_ids = [prompt | responses]``, ``attention_mask = [prompt mask |
        response_attention]`` and verl's position ids of that mask.
    """
    if q0_prompt_ids.shape != q0_prompt_mask.shape or responses.shape != response_attention.shape:
        raise ValueError("ids and masks must have the same shapes")
    if q0_prompt_ids.size(0) != responses.size(0):
        raise ValueError(f"{q0_prompt_ids.size(0)} prompts for {responses.size(0)} responses")
    width = q0_prompt_ids.size(1) if prompt_width is None else prompt_width
    prompts, prompt_mask = left_pad(q0_prompt_ids, q0_prompt_mask, width, pad_token_id)  # (R, P')
    input_ids = torch.cat([prompts, responses.to(prompts.dtype)], dim=1)  # (R, P'+T)
    attention_mask = torch.cat([prompt_mask, response_attention.to(prompt_mask.dtype)], dim=1)  # (R, P'+T)
    return AnchoredRows(prompts, input_ids, attention_mask, position_ids_from_mask(attention_mask))


def original_rows(uids: Sequence[Any]) -> torch.Tensor:
    """(R,) for every row, the index of the first row of its pool that variant 0 (q0) generated."""
    first: dict[str, int] = {}
    keys = []
    for i, uid in enumerate(uids):
        key, variant = split_uid(uid)
        keys.append(key)
        if variant == 0 and key not in first:
            first[key] = i
    missing = sorted({k for k in keys if k not in first})
    if missing:
        raise ValueError(f"{len(missing)} pool(s) have no row generated from q0, e.g. {missing[0]!r}")
    return torch.tensor([first[k] for k in keys], dtype=torch.long)


def anchor_dataproto(batch, pad_token_id: int) -> int:
    """Anchor a generated verl ``DataProto`` in place on q0; return the number of rows whose prompt changed.

    Rewrites ``prompts``, ``input_ids``, ``attention_mask`` and ``position_ids``, and drops ``rollout_log_probs``
    (the engine's log-probs are conditioned on the generating prompt, so no rollout correction may use them).
    Sets ``meta_info["tagrpo_anchored"]``; a second call does nothing.
    """
    if batch.meta_info.get("tagrpo_anchored"):
        return 0
    td = batch.batch
    for key in ("routed_experts", "teacher_logprobs"):
        if key in td.keys():
            raise NotImplementedError(f"anchor='original' does not support {key!r} (aligned to the generating prompt)")
    prompts, responses, attention = td["prompts"], td["responses"], td["attention_mask"]
    if td["position_ids"].dim() != 2:
        raise NotImplementedError("anchor='original' supports text-only (R, L) position_ids, not multimodal rope")
    p = prompts.size(1)
    src = original_rows(batch.non_tensor_batch["uid"])  # (R,)
    out = anchor_rows(prompts[src], attention[src, :p], responses, attention[:, p:], pad_token_id, prompt_width=p)
    changed = int((out.input_ids[:, :p] != td["input_ids"][:, :p]).any(-1).sum())
    td["prompts"] = out.prompts
    td["input_ids"] = out.input_ids
    td["attention_mask"] = out.attention_mask.to(attention.dtype)
    td["position_ids"] = out.position_ids.to(td["position_ids"].dtype)
    if "rollout_log_probs" in td.keys():
        td.pop("rollout_log_probs")
    batch.meta_info["tagrpo_anchored"] = True
    return changed
