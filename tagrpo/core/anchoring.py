"""Anchoring: which prompt conditions each pool row's log-probabilities in the loss.

A row (question b, variant n, sample i) is always *generated* from ``q_n``. Its loss terms are conditioned as:

- ``anchor="original"`` (TA-GRPO, reading (a) of the paper's ratio): current, old and reference log-probs all on ``q0``.
- ``anchor="none"`` (v1 and the public code): everything on the generating prompt ``q_n``; ``"generating"`` is an
  accepted alias (``resolve_anchor``), the configs store ``"none"``.
- ``anchor="behavior"`` (reading (b)): current and reference log-probs on ``q0``, the old (behaviour)
  log-probs on ``q_n``, a true importance weight that is usually far from 1 and mostly clipped.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from tagrpo.common.modes import check_mode

ANCHORS = ("original", "none", "behavior")
ANCHOR_ALIASES = {"generating": "none"}


def resolve_anchor(name: str, anchor: str) -> str:
    """The canonical mode of ``anchor`` (an alias maps to its mode); a ``ValueError`` naming ``name`` and every
    accepted value otherwise."""
    check_mode(name, anchor, ANCHORS + tuple(ANCHOR_ALIASES))
    return ANCHOR_ALIASES.get(anchor, anchor)


class AnchoredPrompts(NamedTuple):
    """Left-padded prompt tokens per row: ``policy_*`` condition the current and reference log-probs,
    ``behavior_*`` the old log-probs. All four are (R, P)."""

    policy_ids: torch.Tensor
    policy_mask: torch.Tensor
    behavior_ids: torch.Tensor
    behavior_mask: torch.Tensor


def anchor_variants(variant_index: torch.Tensor, anchor: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The variant whose prompt conditions each row's policy and behaviour log-probs.

    Args:
        variant_index: (R,) long, the variant n that generated each row.
        anchor: one of ``ANCHORS``.

    Returns:
        ``(policy_variant, behavior_variant)``, each (R,) long.
    """
    check_mode("anchor", anchor, ANCHORS)
    original = torch.zeros_like(variant_index)  # (R,)
    if anchor == "original":
        return original, original
    if anchor == "none":
        return variant_index, variant_index
    return original, variant_index


def _take(variant_ids: torch.Tensor, variant_mask: torch.Tensor, choice: torch.Tensor):
    rows = torch.arange(variant_ids.size(0), device=variant_ids.device)  # (R,)
    ids = variant_ids[rows, choice]  # (R, P)
    mask = variant_mask[rows, choice]  # (R, P)
    used = mask.any(0)  # (P,)
    start = int(used.nonzero()[0]) if used.any() else mask.size(1)
    return ids[:, start:], mask[:, start:]


def select_prompt_tokens(
    variant_ids: torch.Tensor, variant_mask: torch.Tensor, variant_index: torch.Tensor, anchor: str
) -> AnchoredPrompts:
    """Pick, for every row, the prompt tokens its loss is conditioned on.

    Args:
        variant_ids: (R, N+1, P) left-padded token ids of the row's question variants ``q0..qN``.
        variant_mask: (R, N+1, P) attention mask (1 = token, 0 = left padding).
        variant_index: (R,) the variant that generated each row.
        anchor: one of ``ANCHORS``.

    Returns:
        AnchoredPrompts; each pair is trimmed of the left-padding columns that no selected row uses.
    """
    policy_variant, behavior_variant = anchor_variants(variant_index, anchor)
    policy_ids, policy_mask = _take(variant_ids, variant_mask, policy_variant)
    behavior_ids, behavior_mask = _take(variant_ids, variant_mask, behavior_variant)
    return AnchoredPrompts(policy_ids, policy_mask, behavior_ids, behavior_mask)


def engine_correction_allowed(anchor: str) -> bool:
    """Whether an inference-engine importance correction (TRL's ``vllm_importance_sampling_correction``) is valid.

    The engine's sampling log-probs are conditioned on the generating prompt ``q_n``. TRL compares them with the
    old log-probs, which are conditioned on the policy prompt. Only ``anchor="none"`` conditions both on ``q_n``;
    under ``original`` or ``behavior`` the comparison would mix the rephrasing shift with the engine mismatch
    and mask most neighbour responses, so the correction must be disabled there.
    """
    check_mode("anchor", anchor, ANCHORS)
    return anchor == "none"
