"""The written-out GRPO objective that the tests hold TRL's loss to; no training path calls it.

The trainer trains with TRL's ``GRPOTrainer._compute_loss`` (see "What stays TRL's" in
``tagrpo.trainer.trainer``). This module spells the same loss out: a token-level PPO clipped surrogate with verl's
aggregation modes and an optional k3 KL penalty. ``tests/test_trl_equivalence.py`` checks it equal to TRL's loss on
the same tensors for every loss type ``TAGRPOConfig`` accepts (``bnpo`` and ``dapo`` = ``token-mean``, ``grpo`` =
``seq-mean-token-mean``, ``dr_grpo`` = ``seq-mean-token-sum-norm``), so a TRL release that changes its loss fails
there; ``tests/test_core_loss.py`` checks it against values worked out by hand.
"""

from __future__ import annotations

import torch

from tagrpo.common.modes import check_mode

AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm")


def aggregate(values: torch.Tensor, mask: torch.Tensor, mode: str, max_completion_length: int | None = None):
    """Reduce per-token values (R, T) under mask (R, T) to a scalar.

    ``token-mean``: sum over all valid tokens / number of valid tokens.
    ``seq-mean-token-mean``: mean over rows of each row's token mean (rows with no token count as 0).
    ``seq-mean-token-sum-norm``: sum over all valid tokens / (R * max_completion_length) (Dr. GRPO).
    """
    check_mode("loss_agg_mode", mode, AGG_MODES)
    keep = mask.bool()  # (R, T)
    masked = torch.where(keep, values, torch.zeros_like(values))  # (R, T): inf/NaN off the mask cannot leak
    count = keep.to(values.dtype)  # (R, T)
    if mode == "token-mean":
        return masked.sum() / count.sum().clamp(min=1.0)
    if mode == "seq-mean-token-mean":
        return (masked.sum(-1) / count.sum(-1).clamp(min=1.0)).mean()
    if max_completion_length is None:
        raise ValueError("loss_agg_mode='seq-mean-token-sum-norm' needs max_completion_length")
    return masked.sum() / (values.size(0) * max_completion_length)


def k3_kl(log_probs: torch.Tensor, ref_log_probs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimator of KL(pi || ref): exp(ref - logp) - (ref - logp) - 1, (R, T) -> (R, T)."""
    delta = ref_log_probs - log_probs  # (R, T)
    return torch.exp(delta) - delta - 1


def clipped_surrogate(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    clip_ratio_c: float | None = None,
    loss_agg_mode: str = "token-mean",
    ref_log_probs: torch.Tensor | None = None,
    beta: float = 0.0,
    max_completion_length: int | None = None,
    kl_ratio_weighted: bool = False,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO clipped surrogate loss (to minimise) over a batch of responses.

    Args:
        log_probs: (R, T) current log-probs of the sampled tokens (carry the gradient).
        old_log_probs: (R, T) log-probs under the behaviour policy.
        advantages: (R,) or (R, T).
        mask: (R, T) 1 on response tokens that count.
        epsilon, epsilon_high: the ratio is clipped to [1 - epsilon, 1 + epsilon_high] (epsilon_high defaults
            to epsilon).
        clip_ratio_c: dual clip (verl): for negative advantages the loss is capped at ``-A * clip_ratio_c``.
            Must be > 1; None disables it.
        loss_agg_mode: one of ``AGG_MODES``.
        ref_log_probs: (R, T) reference log-probs for the k3 KL penalty, weighted by ``beta``.
        kl_ratio_weighted: multiply the per-token KL by the (unclipped) ratio, as TRL does by default
            (``use_bias_correction_kl``); verl and the paper's code do not.

    Returns:
        ``(loss, metrics)``: the scalar loss and detached scalars ``clip_frac_low``, ``clip_frac_high``,
        ``dual_clip_frac``, ``ratio_mean`` and, with a reference, ``kl``.
    """
    check_mode("loss_agg_mode", loss_agg_mode, AGG_MODES)
    epsilon_high = epsilon if epsilon_high is None else epsilon_high
    if clip_ratio_c is not None and clip_ratio_c <= 1.0:
        raise ValueError(f"clip_ratio_c must be > 1, got {clip_ratio_c}")
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(-1)  # (R, 1)
    keep = mask.bool()  # (R, T)
    log_ratio = torch.where(keep, log_probs - old_log_probs, torch.zeros_like(log_probs))  # (R, T)
    ratio = torch.exp(log_ratio)  # (R, T): 1 off the mask
    loss_unclipped = -advantages * ratio  # (R, T)
    loss_clipped = -advantages * torch.clamp(ratio, 1.0 - epsilon, 1.0 + epsilon_high)  # (R, T)
    per_token = torch.maximum(loss_unclipped, loss_clipped)  # (R, T)
    dual = torch.zeros_like(per_token, dtype=torch.bool)  # (R, T)
    if clip_ratio_c is not None:
        cap = -advantages * clip_ratio_c  # (R, T) or (R, 1)
        dual = (advantages < 0) & (per_token > cap)  # (R, T)
        per_token = torch.where(advantages < 0, torch.minimum(per_token, cap), per_token)  # (R, T)
    metrics = {}
    if ref_log_probs is not None and beta != 0.0:
        kl = k3_kl(log_probs, torch.where(keep, ref_log_probs, log_probs))  # (R, T): 0 off the mask
        per_token = per_token + beta * (kl * ratio if kl_ratio_weighted else kl)
        metrics["kl"] = aggregate(kl, mask, "token-mean").detach()
    loss = aggregate(per_token, mask, loss_agg_mode, max_completion_length)
    fmask = mask.to(ratio.dtype)  # (R, T)
    low = ((ratio < 1.0 - epsilon) & (advantages < 0)).to(ratio.dtype)  # (R, T)
    high = ((ratio > 1.0 + epsilon_high) & (advantages > 0)).to(ratio.dtype)  # (R, T)
    metrics["clip_frac_low"] = aggregate(low, fmask, "token-mean").detach()
    metrics["clip_frac_high"] = aggregate(high, fmask, "token-mean").detach()
    metrics["dual_clip_frac"] = aggregate(dual.to(ratio.dtype), fmask, "token-mean").detach()
    metrics["ratio_mean"] = aggregate(ratio, fmask, "token-mean").detach()
    return loss, metrics
