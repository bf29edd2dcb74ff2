"""Pure TA-GRPO mathematics: tensors and numbers in, tensors out. No trainer, config or distributed code."""

from tagrpo.core.advantages import SCALES, SCOPES, group_diagnostics, pooled_advantages, uniform_groups
from tagrpo.core.anchoring import (
    ANCHOR_ALIASES,
    ANCHORS,
    AnchoredPrompts,
    anchor_variants,
    engine_correction_allowed,
    resolve_anchor,
    select_prompt_tokens,
)
from tagrpo.core.loss import AGG_MODES, aggregate, clipped_surrogate, k3_kl
from tagrpo.core.passk import pass_at_k
from tagrpo.modes import check_mode

__all__ = [
    "AGG_MODES",
    "ANCHOR_ALIASES",
    "ANCHORS",
    "SCALES",
    "SCOPES",
    "AnchoredPrompts",
    "aggregate",
    "anchor_variants",
    "check_mode",
    "clipped_surrogate",
    "engine_correction_allowed",
    "group_diagnostics",
    "k3_kl",
    "pass_at_k",
    "pooled_advantages",
    "resolve_anchor",
    "select_prompt_tokens",
    "uniform_groups",
]
