"""verl advantage estimators ``ta_grpo`` (pooled) and ``ta_grpo_variant`` (per-variant ablation).

verl hands a registered estimator ``token_level_rewards`` (R, T), ``response_mask`` (R, T), ``config``
(``algorithm``) and ``index`` = the rows' ``uid``. The TA-GRPO trainer gives every row the uid
``"{question uid}#v{n}"`` (``tagrpo.integrations.verl.expand``), so the estimator reads each row's pool (the
original question) and variant from it, lays the rewards out as (B, N+1, G) and calls
``tagrpo.core.pooled_advantages``. ``algorithm.norm_adv_by_std_in_grpo`` picks the scale (``std`` or ``none``,
Dr. GRPO), ``epsilon`` is verl's 1e-6.

- ``ta_grpo``: scope ``pool``, normalise over the question's (N+1)*G rewards. With uids that carry no variant
  suffix, a pool is a uid's rows: the estimator then equals verl's stock ``grpo`` (on groups of at least two rows;
  verl passes a lone row's reward through unchanged, the core gives it 0).
- ``ta_grpo_variant``: scope ``variant``, each variant's G rewards on their own (stock ``grpo`` on the
  expanded prompts).

Pools whose variants have different sizes are padded with NaN, which the core leaves out. Importing this module
registers both names with verl when verl is installed; the functions themselves need only torch and numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from tagrpo.core import pooled_advantages
from tagrpo.integrations.verl.expand import split_uid

ESTIMATOR_NAMES = {"ta_grpo": "pool", "ta_grpo_variant": "variant"}


def pool_layout(index: Sequence[Any]) -> tuple[torch.Tensor, tuple[int, int, int]]:
    """Where each row sits in a (B, N+1, G) pool tensor.

    Args:
        index: (R,) row uids (``split_uid`` gives pool and variant).

    Returns:
        ``(position, (B, V, G))``: position (R, 3) long ``(b, n, i)`` with pools and samples numbered in order of
        first appearance, V the most variants and G the most rows per variant found.
    """
    pools: dict[str, int] = {}
    seen: dict[tuple[int, int], int] = {}
    position = []
    for uid in index:
        key, variant = split_uid(uid)
        b = pools.setdefault(key, len(pools))
        i = seen.get((b, variant), 0)
        seen[(b, variant)] = i + 1
        position.append((b, variant, i))
    if not position:
        return torch.zeros(0, 3, dtype=torch.long), (0, 1, 1)
    pos = torch.tensor(position, dtype=torch.long)  # (R, 3)
    return pos, (len(pools), int(pos[:, 1].max()) + 1, int(pos[:, 2].max()) + 1)


def ta_grpo_advantages(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Sequence[Any],
    epsilon: float = 1e-6,
    norm_adv_by_std_in_grpo: bool = True,
    config: Any = None,
    scope: str = "pool",
    **_: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pooled (or per-variant) outcome advantages, broadcast over each row's response tokens.

    Args:
        token_level_rewards: (R, T) rewards; a row's outcome reward is their sum (verl's convention).
        response_mask: (R, T) 1 on response tokens.
        index: (R,) uids, ``"{pool}#v{n}"`` or plain (one pool each, variant 0).
        epsilon: added to the standard deviation.
        norm_adv_by_std_in_grpo: divide by the std (overridden by ``config.norm_adv_by_std_in_grpo``).
        config: verl's ``algorithm`` config or None.
        scope: ``"pool"`` or ``"variant"``.

    Returns:
        ``(advantages, returns)``, both (R, T) and equal, as verl's GRPO returns them.
    """
    if config is not None:
        norm_adv_by_std_in_grpo = bool(config.get("norm_adv_by_std_in_grpo", norm_adv_by_std_in_grpo))
    scale = "std" if norm_adv_by_std_in_grpo else "none"
    scores = token_level_rewards.sum(dim=-1).float()  # (R,)
    if len(index) != scores.size(0):
        raise ValueError(f"{len(index)} uids for {scores.size(0)} rows")
    pos, (b, v, g) = pool_layout(index)
    with torch.no_grad():
        grid = torch.full((b, v, g), float("nan"), dtype=torch.float32, device=scores.device)  # (B, N+1, G)
        pos = pos.to(scores.device)
        grid[pos[:, 0], pos[:, 1], pos[:, 2]] = scores
        adv = pooled_advantages(grid, scope=scope, scale=scale, eps=epsilon)  # (B, N+1, G)
        per_row = adv[pos[:, 0], pos[:, 1], pos[:, 2]]  # (R,)
        out = per_row.unsqueeze(-1).to(token_level_rewards.dtype) * response_mask  # (R, T)
    return out, out


def compute_ta_grpo_advantage(
    token_level_rewards, response_mask, index, epsilon=1e-6, norm_adv_by_std_in_grpo=True, config=None, **kwargs
):
    """verl estimator ``ta_grpo``: :func:`ta_grpo_advantages` with scope ``pool``."""
    return ta_grpo_advantages(
        token_level_rewards, response_mask, index, epsilon, norm_adv_by_std_in_grpo, config, scope="pool", **kwargs
    )


def compute_ta_grpo_variant_advantage(
    token_level_rewards, response_mask, index, epsilon=1e-6, norm_adv_by_std_in_grpo=True, config=None, **kwargs
):
    """verl estimator ``ta_grpo_variant``: :func:`ta_grpo_advantages` with scope ``variant``."""
    return ta_grpo_advantages(
        token_level_rewards, response_mask, index, epsilon, norm_adv_by_std_in_grpo, config, scope="variant", **kwargs
    )


ESTIMATORS = {"ta_grpo": compute_ta_grpo_advantage, "ta_grpo_variant": compute_ta_grpo_variant_advantage}


def register() -> bool:
    """Register ``ta_grpo`` and ``ta_grpo_variant`` in verl's estimator registry; False when verl is missing."""
    try:
        from verl.trainer.ppo import core_algos
    except ImportError:
        return False
    registry = core_algos.ADV_ESTIMATOR_REGISTRY
    for name, fn in ESTIMATORS.items():
        existing = registry.get(name)
        if existing is not None and existing is not fn and getattr(existing, "__module__", "") != fn.__module__:
            raise ValueError(f"verl already has an advantage estimator {name!r}: {existing}")
        registry[name] = fn  # same function, or this module imported again (e.g. in a Ray worker)
    return True


REGISTERED = register()
