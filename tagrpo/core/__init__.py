"""Pure TA-GRPO mathematics: tensors and numbers in, tensors out. No trainer, config or distributed code."""

from tagrpo.common.modes import check_mode
from tagrpo.core.advantages import (
    GATES,
    SCALES,
    SCOPES,
    all_wrong,
    group_diagnostics,
    pooled_advantages,
    shaped_advantages,
    uniform_groups,
)
from tagrpo.core.anchoring import (
    ANCHOR_ALIASES,
    ANCHORS,
    AnchoredPrompts,
    anchor_variants,
    engine_correction_allowed,
    resolve_anchor,
    select_prompt_tokens,
)
from tagrpo.core.engine import (
    ENGINE_CORRECTIONS,
    IS_MODES,
    engine_correction_plan,
    engine_importance_ratio,
    engine_ratio_metrics,
    off_policy_mask_conditionals,
)
from tagrpo.core.loss import AGG_MODES, aggregate, clipped_surrogate, k3_kl
from tagrpo.core.passk import pass_at_k

__all__ = [
    "AGG_MODES",
    "ANCHOR_ALIASES",
    "ANCHORS",
    "ENGINE_CORRECTIONS",
    "GATES",
    "IS_MODES",
    "SCALES",
    "SCOPES",
    "AnchoredPrompts",
    "aggregate",
    "all_wrong",
    "anchor_variants",
    "check_mode",
    "clipped_surrogate",
    "engine_correction_allowed",
    "engine_correction_plan",
    "engine_importance_ratio",
    "engine_ratio_metrics",
    "group_diagnostics",
    "k3_kl",
    "off_policy_mask_conditionals",
    "pass_at_k",
    "pooled_advantages",
    "resolve_anchor",
    "select_prompt_tokens",
    "shaped_advantages",
    "uniform_groups",
]
