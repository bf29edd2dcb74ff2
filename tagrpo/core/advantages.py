"""Pooled (TA-GRPO) and per-variant (GRPO) advantages, and the reward diagnostics the paper reports."""

from __future__ import annotations

import torch

from tagrpo.common.modes import check_mode

SCOPES = ("pool", "variant")
SCALES = ("std", "none")
GATES = ("none", "q0_all_wrong")


def _group_stats(grouped: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """NaN-aware statistics over the last axis of ``grouped`` (..., M).

    Returns ``valid`` (..., M), ``mean`` (..., 1), unbiased ``std`` (..., 1) and ``uniform`` (..., 1): a group
    whose valid rewards are all equal (or that has fewer than two valid rewards).
    """
    valid = ~torch.isnan(grouped)  # (..., M)
    count = valid.sum(-1, keepdim=True)  # (..., 1)
    filled = torch.where(valid, grouped, torch.zeros_like(grouped))  # (..., M)
    mean = filled.sum(-1, keepdim=True) / count.clamp(min=1)  # (..., 1)
    centered = torch.where(valid, grouped - mean, torch.zeros_like(grouped))  # (..., M)
    var = (centered**2).sum(-1, keepdim=True) / (count - 1).clamp(min=1)  # (..., 1)
    high = torch.where(valid, grouped, torch.full_like(grouped, -torch.inf)).amax(-1, keepdim=True)  # (..., 1)
    low = torch.where(valid, grouped, torch.full_like(grouped, torch.inf)).amin(-1, keepdim=True)  # (..., 1)
    uniform = (count < 2) | (high == low)  # (..., 1)
    return valid, mean, var.sqrt(), uniform


def uniform_groups(rewards: torch.Tensor) -> torch.Tensor:
    """(B,) whether each (B, G) group's valid rewards are all equal (fewer than two valid rewards count as
    uniform): the groups that carry no gradient alone, which ``pool_mode="adaptive"`` expands."""
    return _group_stats(rewards)[3].squeeze(-1)  # (B,)


def pooled_advantages(
    rewards: torch.Tensor, scope: str = "pool", scale: str = "std", eps: float = 1e-6
) -> torch.Tensor:
    """Group-relative advantages over a question's pool or over each variant's own samples.

    Args:
        rewards: (B, N+1, G) rewards; ``rewards[:, 0]`` belongs to the original question. NaN marks an
            unscorable response: it is left out of the mean and the std and gets advantage 0.
        scope: ``"pool"`` normalises over all (N+1)*G rewards of a question (TA-GRPO); ``"variant"``
            normalises each variant's G rewards on their own (the ablation; plain GRPO when N=0).
        scale: ``"std"`` divides by ``std + eps``; ``"none"`` only subtracts the mean (Dr. GRPO).
        eps: added to the standard deviation. TRL uses 1e-4, verl 1e-6.

    The standard deviation is the unbiased one (divides by M-1 for M valid rewards), as in TRL and verl.
    A uniform group (all valid rewards equal, or fewer than two of them) gets advantage exactly 0.

    Returns:
        (B, N+1, G) advantages.
    """
    check_mode("scope", scope, SCOPES)
    check_mode("scale", scale, SCALES)
    if rewards.dim() != 3:
        raise ValueError(f"rewards must have shape (B, N+1, G), got {tuple(rewards.shape)}")
    b, v, g = rewards.shape
    rewards = rewards if rewards.is_floating_point() else rewards.float()
    grouped = rewards.reshape(b, 1, v * g) if scope == "pool" else rewards  # (B, 1, (N+1)G) or (B, N+1, G)
    valid, mean, std, uniform = _group_stats(grouped)
    centered = grouped - mean  # (B, H, M)
    adv = centered if scale == "none" else centered / (std + eps)  # (B, H, M)
    adv = torch.where(valid & ~uniform, adv, torch.zeros_like(adv))  # (B, H, M)
    return adv.reshape(b, v, g)


def all_wrong(rewards: torch.Tensor) -> torch.Tensor:
    """(B,) whether each (B, G) group has at least one valid reward and every valid reward is 0."""
    valid = ~torch.isnan(rewards)  # (B, G)
    return valid.any(-1) & torch.where(valid, rewards == 0, torch.ones_like(valid)).all(-1)  # (B,)


def shaped_advantages(
    rewards: torch.Tensor,
    scope: str = "pool",
    scale: str = "std",
    eps: float = 1e-6,
    gate: str = "none",
    rephrased_weight: float = 1.0,
) -> torch.Tensor:
    """:func:`pooled_advantages`, then gated by q0's group and with the rephrased rows weighted.

    Args:
        rewards: (B, N+1, G) rewards, ``rewards[:, 0]`` the original question's (NaN: unscorable).
        scope, scale, eps: as in :func:`pooled_advantages`.
        gate: ``"none"``: every question as ``scope`` says. ``"q0_all_wrong"`` (gated pools): a question whose q0
            group is all wrong (:func:`all_wrong`) keeps its ``scope`` advantages; any other question's q0 rows
            are normalised over q0's own G as GRPO would, and its rephrased rows get 0 (they carry no signal).
        rephrased_weight: multiplies the advantages of the rephrased rows (variants 1..N); with the clipped
            surrogate and no KL this weights their loss terms by it (a positive factor passes through the min
            and the clip). 1 is TA-GRPO, 0 keeps only q0's rows' signal.

    Returns:
        (B, N+1, G) advantages.
    """
    check_mode("gate", gate, GATES)
    if rephrased_weight < 0:
        raise ValueError(f"rephrased_weight must be >= 0, got {rephrased_weight}")
    adv = pooled_advantages(rewards, scope=scope, scale=scale, eps=eps)  # (B, N+1, G)
    if gate == "q0_all_wrong":
        rewards = rewards if rewards.is_floating_point() else rewards.float()
        own = torch.zeros_like(adv)  # (B, N+1, G)
        own[:, :1] = pooled_advantages(rewards[:, :1], scope="variant", scale=scale, eps=eps)  # (B, 1, G)
        open_pool = all_wrong(rewards[:, 0])[:, None, None]  # (B, 1, 1)
        adv = torch.where(open_pool, adv, own)  # (B, N+1, G)
    weight = torch.full((adv.shape[1],), float(rephrased_weight), dtype=adv.dtype, device=adv.device)  # (N+1,)
    weight[0] = 1.0
    return adv * weight[None, :, None]  # (B, N+1, G)


def group_diagnostics(rewards: torch.Tensor) -> dict[str, float]:
    """Shares of uniform-reward groups, pool-level and original-only, and the mean reward per variant.

    Args:
        rewards: (B, N+1, G) rewards (NaN = unscorable, ignored).

    Returns a dict of floats:
        ``pool/all_zero``, ``pool/all_one``, ``pool/zero_std``: shares of questions whose whole pool has
        every valid reward 0, every valid reward 1, or all valid rewards equal;
        ``original/all_zero``, ``original/all_one``, ``original/zero_std``: the same for q0's G responses alone
        (what plain GRPO sees);
        ``variant/zero_std``: share of the B*(N+1) prompt groups (each variant's G responses) with all valid
        rewards equal, what per-variant normalisation sees;
        ``rescued``: share of questions whose original sub-group is uniform but whose pool is mixed;
        ``rescued_of_uniform``: the same count divided by the number of uniform original sub-groups;
        ``rescued/from_zero``, ``rescued/from_one``: shares of questions rescued from an all-wrong, or from an
        all-right, original sub-group (the rescue split; together ``rescued`` for 0/1 rewards);
        ``reward/variant_{n}``: mean valid reward of variant n (0 = original).
    """
    if rewards.dim() != 3:
        raise ValueError(f"rewards must have shape (B, N+1, G), got {tuple(rewards.shape)}")
    b, v, g = rewards.shape
    rewards = rewards if rewards.is_floating_point() else rewards.float()
    out: dict[str, float] = {}
    pool = rewards.reshape(b, v * g)  # (B, (N+1)G)
    original = rewards[:, 0]  # (B, G)
    uniform = {}
    for name, grouped in (("pool", pool), ("original", original)):
        valid, _, _, uni = _group_stats(grouped)
        uni = uni.squeeze(-1)  # (B,)
        has_valid = valid.any(-1)  # (B,)
        all_zero = has_valid & torch.where(valid, grouped == 0, torch.ones_like(valid)).all(-1)  # (B,)
        all_one = has_valid & torch.where(valid, grouped == 1, torch.ones_like(valid)).all(-1)  # (B,)
        out[f"{name}/all_zero"] = all_zero.float().mean().item()
        out[f"{name}/all_one"] = all_one.float().mean().item()
        out[f"{name}/zero_std"] = uni.float().mean().item()
        uniform[name] = uni
        uniform[f"{name}/all_zero"], uniform[f"{name}/all_one"] = all_zero, all_one
    _, _, _, per_variant = _group_stats(rewards.reshape(b * v, g))  # (B*(N+1), 1)
    out["variant/zero_std"] = per_variant.float().mean().item()
    rescued = uniform["original"] & ~uniform["pool"]  # (B,)
    out["rescued"] = rescued.float().mean().item()
    n_uniform = int(uniform["original"].sum())
    out["rescued_of_uniform"] = float(rescued.sum()) / n_uniform if n_uniform else 0.0
    out["rescued/from_zero"] = (rescued & uniform["original/all_zero"]).float().mean().item()
    out["rescued/from_one"] = (rescued & uniform["original/all_one"]).float().mean().item()
    variant_means = torch.nanmean(rewards.transpose(0, 1).reshape(v, b * g), dim=-1)  # (N+1,)
    for n in range(v):
        out[f"reward/variant_{n}"] = variant_means[n].item()
    return out
