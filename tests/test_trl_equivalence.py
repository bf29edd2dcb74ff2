"""Our core against TRL's own GRPOTrainer on the same tensors: advantages and the clipped loss."""

from __future__ import annotations

import pytest
import torch
from trainer_utils import spy, trl_trainer

from tagrpo.core import clipped_surrogate, pooled_advantages


def _trl_rewards_and_advantages(trainer):
    rewards = []
    spy(trainer, "_calculate_rewards", rewards)
    trainer.train()
    per_func = rewards[0][2][:, 0]  # (R,)
    advantages = torch.tensor(list(trainer._logs["advantages"]))  # (R,)
    assert per_func.numel() == advantages.numel() == 16
    return per_func, advantages


@pytest.mark.parametrize("scale_rewards", ["group", "none"])
def test_n0_advantages_equal_trl(model_dirs, tmp_path, scale_rewards):
    trainer = trl_trainer(model_dirs["qwen3"], tmp_path, num_generations=4, scale_rewards=scale_rewards)
    rewards, trl_adv = _trl_rewards_and_advantages(trainer)
    grouped = rewards.view(4, 1, 4)  # (B, N+1, G) with N=0
    assert grouped.std(-1).gt(0).any(), "the check needs at least one mixed group"
    scale = "std" if scale_rewards == "group" else "none"
    for scope in ("pool", "variant"):
        ours = pooled_advantages(grouped, scope=scope, scale=scale, eps=1e-4).view(-1)
        torch.testing.assert_close(ours, trl_adv, rtol=0, atol=1e-6)


def test_pooled_advantages_equal_trl_groups_of_pool_size(model_dirs, tmp_path):
    trainer = trl_trainer(model_dirs["qwen3"], tmp_path, num_generations=8)  # (N+1)*G with N=3, G=2
    rewards, trl_adv = _trl_rewards_and_advantages(trainer)
    ours = pooled_advantages(rewards.view(2, 4, 2), scope="pool", eps=1e-4).view(-1)
    torch.testing.assert_close(ours, trl_adv, rtol=0, atol=1e-6)


# Each loss type TAGRPOConfig accepts, with the aggregation of tagrpo.core.clipped_surrogate that equals it.
LOSS_AGGREGATIONS = [
    ("grpo", "seq-mean-token-mean"),
    ("bnpo", "token-mean"),
    ("dr_grpo", "seq-mean-token-sum-norm"),
    ("dapo", "token-mean"),  # TRL's default: tokens of the whole generation batch (one process here)
]


@pytest.mark.parametrize("kl_weighted", [True, False])
@pytest.mark.parametrize(("loss_type", "agg"), LOSS_AGGREGATIONS)
def test_clipped_surrogate_equals_trl_loss(model_dirs, tmp_path, loss_type, agg, kl_weighted):
    trainer = trl_trainer(
        model_dirs["qwen3"],
        tmp_path,
        num_generations=4,
        loss_type=loss_type,
        beta=0.04,
        epsilon=0.2,
        epsilon_high=0.28,
        use_bias_correction_kl=kl_weighted,
    )
    # One micro-batch that is the whole generation batch: no accumulation for the per-micro-batch means; for dapo,
    # whose normaliser is the generation batch's token count rescaled by accumulation / steps_per_generation,
    # the two must be equal.
    trainer.current_gradient_accumulation_steps = trainer.args.steps_per_generation if loss_type == "dapo" else 1
    model = trainer.model.train()
    gen = torch.Generator().manual_seed(0)
    r, p, t = 6, 5, 6
    prompt_ids = torch.randint(3, 90, (r, p), generator=gen)
    completion_ids = torch.randint(3, 90, (r, t), generator=gen)
    prompt_mask = torch.ones(r, p, dtype=torch.long)
    prompt_mask[0, :2] = 0  # left padding
    completion_mask = (torch.arange(t).expand(r, t) < torch.tensor([[6], [3], [5], [1], [6], [4]])).long()
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            model, torch.cat([prompt_ids, completion_ids], 1), torch.cat([prompt_mask, completion_mask], 1), t
        )
    old = logps + 0.4 * torch.randn(r, t, generator=gen)  # ratios on both sides of the clip range
    ref = logps + 0.3 * torch.randn(r, t, generator=gen)
    advantages = torch.tensor([1.0, -1.0, 0.5, -0.5, 2.0, -2.0])
    inputs = dict(
        prompt_ids=prompt_ids,
        prompt_mask=prompt_mask,
        completion_ids=completion_ids,
        completion_mask=completion_mask,
        advantages=advantages,
        old_per_token_logps=old,
        ref_per_token_logps=ref,
        num_items_in_batch=completion_mask.sum(),
    )
    trl_loss = trainer._compute_loss(model, inputs)
    ours, _ = clipped_surrogate(
        logps,
        old,
        advantages,
        completion_mask,
        epsilon=0.2,
        epsilon_high=0.28,
        loss_agg_mode=agg,
        ref_log_probs=ref,
        beta=0.04,
        max_completion_length=6,
        kl_ratio_weighted=kl_weighted,
    )
    ratio = torch.exp(logps - old)[completion_mask.bool()]
    assert (ratio > 1.28).any() and (ratio < 0.8).any(), "the check needs clipped tokens on both sides"
    torch.testing.assert_close(trl_loss.detach(), ours, rtol=1e-5, atol=1e-6)


def test_every_allowed_loss_type_is_covered_above():
    from tagrpo.trainer.config import LOSS_TYPES

    covered = [loss_type for loss_type, _ in LOSS_AGGREGATIONS]  # what test_clipped_surrogate_equals_trl_loss runs
    assert sorted(LOSS_TYPES) == sorted(covered)
