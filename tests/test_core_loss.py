"""Token-level PPO clipped surrogate (tagrpo.core.loss): every regime and aggregation, worked by hand.

Ratios are set exactly by using ``old_log_probs = 0`` and ``log_probs = log(ratio)`` in float64.
"""

from __future__ import annotations

import math

import pytest
import torch

from tagrpo.core import AGG_MODES, clipped_surrogate, k3_kl

E = math.e
F64 = torch.float64


def f(rows):
    return torch.tensor(rows, dtype=F64)


def one_token(ratio, adv, **kw):
    """Loss, metrics and d loss / d log_prob for a single token with the given ratio and advantage."""
    lp = f([[math.log(ratio)]]).requires_grad_(True)
    loss, metrics = clipped_surrogate(lp, f([[0.0]]), f([adv]), f([[1.0]]), **kw)
    loss.backward()
    return loss.item(), metrics, lp.grad.item()


def assert_num(actual, expected, atol=1e-12):
    value = float(actual.detach()) if torch.is_tensor(actual) else float(actual)
    assert abs(value - expected) <= atol, (value, expected)


# ---------------------------------------------------------------- one regime per test (epsilon = 0.2)


def test_inside_clip_range():
    # ratio 1.1, A = 2: -A * r = -2.2 (clip range [0.8, 1.2] not reached); grad -A * r = -2.2.
    loss, m, grad = one_token(1.1, 2.0)
    assert_num(loss, -2.2)
    assert_num(grad, -2.2)
    assert m["clip_frac_low"] == 0 and m["clip_frac_high"] == 0 and m["dual_clip_frac"] == 0
    assert_num(m["ratio_mean"], 1.1)
    # ratio 0.9, A = -1: -A * r = 0.9, unclipped; grad -A * r = 0.9.
    loss, m, grad = one_token(0.9, -1.0)
    assert_num(loss, 0.9)
    assert_num(grad, 0.9)


def test_high_ratio_positive_advantage_is_clipped():
    # ratio 1.5, A = 1: max(-1.5, -1.2) = -1.2 (clipped at 1 + 0.2), no gradient.
    loss, m, grad = one_token(1.5, 1.0)
    assert_num(loss, -1.2)
    assert grad == 0.0
    assert m["clip_frac_high"] == 1.0 and m["clip_frac_low"] == 0.0


def test_high_ratio_negative_advantage_is_not_clipped():
    # ratio 1.5, A = -1: max(1.5, 1.2) = 1.5 (unclipped, pessimistic side); grad -A * r = 1.5.
    loss, m, grad = one_token(1.5, -1.0)
    assert_num(loss, 1.5)
    assert_num(grad, 1.5)
    assert m["clip_frac_high"] == 0.0 and m["clip_frac_low"] == 0.0


def test_low_ratio_negative_advantage_is_clipped():
    # ratio 0.5, A = -1: max(0.5, 0.8) = 0.8 (clipped at 1 - 0.2), no gradient.
    loss, m, grad = one_token(0.5, -1.0)
    assert_num(loss, 0.8)
    assert grad == 0.0
    assert m["clip_frac_low"] == 1.0 and m["clip_frac_high"] == 0.0


def test_low_ratio_positive_advantage_is_not_clipped():
    # ratio 0.5, A = 1: max(-0.5, -0.8) = -0.5; grad -A * r = -0.5.
    loss, m, grad = one_token(0.5, 1.0)
    assert_num(loss, -0.5)
    assert_num(grad, -0.5)
    assert m["clip_frac_low"] == 0.0


def test_asymmetric_epsilon_high():
    # epsilon 0.2, epsilon_high 0.28: clip range [0.8, 1.28].
    # ratio 1.25, A = 1: inside -> -1.25 (with the symmetric default it would be -1.2).
    assert_num(one_token(1.25, 1.0, epsilon_high=0.28)[0], -1.25)
    assert_num(one_token(1.25, 1.0)[0], -1.2)
    # ratio 1.4, A = 1: clipped at 1.28 -> -1.28.
    loss, m, _ = one_token(1.4, 1.0, epsilon_high=0.28)
    assert_num(loss, -1.28)
    assert m["clip_frac_high"] == 1.0
    # the low side keeps epsilon: ratio 0.7, A = -1 -> max(0.7, 0.8) = 0.8.
    assert_num(one_token(0.7, -1.0, epsilon_high=0.28)[0], 0.8)
    # ratio 0.75, A = -1 with epsilon 0.3 and epsilon_high 0.1: range [0.7, 1.1] -> 0.75 unclipped.
    assert_num(one_token(0.75, -1.0, epsilon=0.3, epsilon_high=0.1)[0], 0.75)
    assert_num(one_token(1.15, 1.0, epsilon=0.3, epsilon_high=0.1)[0], -1.1)


def test_dual_clip():
    # A = -1, ratio 5, c = 3: PPO term max(5, 0.8) = 5 -> capped at -A * c = 3; no gradient.
    loss, m, grad = one_token(5.0, -1.0, clip_ratio_c=3.0)
    assert_num(loss, 3.0)
    assert grad == 0.0
    assert m["dual_clip_frac"] == 1.0
    # without dual clip the same token costs 5 with gradient 5.
    assert_num(one_token(5.0, -1.0)[0], 5.0)
    # A = -2, ratio 2: PPO term 4 < cap 6 -> untouched, grad 4, dual_clip_frac 0.
    loss, m, grad = one_token(2.0, -2.0, clip_ratio_c=3.0)
    assert_num(loss, 4.0)
    assert_num(grad, 4.0)
    assert m["dual_clip_frac"] == 0.0
    # positive advantage is never dual-clipped: A = 1, ratio 5 -> -1.2 as usual.
    loss, m, _ = one_token(5.0, 1.0, clip_ratio_c=3.0)
    assert_num(loss, -1.2)
    assert m["dual_clip_frac"] == 0.0


# ---------------------------------------------------------------- aggregation modes

# ratio 1 everywhere, so per-token loss = -A. Ragged mask: row 0 has 3 tokens, row 1 has 1.
ADV = f([[1.0, 2.0, 3.0], [4.0, 100.0, 100.0]])
MASK = f([[1, 1, 1], [1, 0, 0]])


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("token-mean", -2.5),  # (-1 - 2 - 3 - 4) / 4 tokens
        ("seq-mean-token-mean", -3.0),  # mean(-6/3, -4/1) = mean(-2, -4)
        ("seq-mean-token-sum-norm", -1.0),  # -10 / (R=2 * max_completion_length=5)
    ],
)
def test_aggregation_modes(mode, expected):
    zeros = torch.zeros(2, 3, dtype=F64)
    loss, _ = clipped_surrogate(zeros, zeros, ADV, MASK, loss_agg_mode=mode, max_completion_length=5)
    assert_num(loss, expected)


def test_seq_mean_token_mean_row_without_tokens_counts_as_zero():
    # row 0 mean -2, row 1 has no token -> 0; mean over 2 rows = -1.
    zeros = torch.zeros(2, 3, dtype=F64)
    mask = f([[1, 1, 1], [0, 0, 0]])
    loss, _ = clipped_surrogate(zeros, zeros, ADV, mask, loss_agg_mode="seq-mean-token-mean")
    assert_num(loss, -1.0)


# ---------------------------------------------------------------- KL term


def test_k3_kl_direction_and_values():
    # k3 = exp(d) - d - 1 with d = ref - logp.
    # logp -1, ref 0: d = 1 -> e - 2.  logp 0, ref ln2: d = ln2 -> 1 - ln2.  logp 0, ref -ln2: ln2 - 1/2.
    kl = k3_kl(f([[-1.0, 0.0, 0.0, 0.3]]), f([[0.0, math.log(2), -math.log(2), 0.3]]))
    expected = f([[E - 2, 1 - math.log(2), math.log(2) - 0.5, 0.0]])
    torch.testing.assert_close(kl, expected, atol=1e-12, rtol=0.0)


def test_kl_penalty_with_beta():
    # log_probs = old = 0 (ratio 1), A = 1 -> PPO term -1 per token. ref = [1, 0] -> d = [1, 0],
    # k3 = [e - 2, 0]. beta 0.1: per token [-1 + 0.1 (e - 2), -1]; token-mean = -1 + 0.05 (e - 2).
    zeros = torch.zeros(1, 2, dtype=F64)
    ref = f([[1.0, 0.0]])
    loss, m = clipped_surrogate(zeros, zeros, f([1.0]), f([[1, 1]]), ref_log_probs=ref, beta=0.1)
    assert_num(loss, -1 + 0.05 * (E - 2))  # -0.96408591...
    assert_num(m["kl"], (E - 2) / 2)  # KL metric: token-mean of k3, without beta
    # beta 0 (the default): no KL term and no "kl" metric even with a reference.
    loss, m = clipped_surrogate(zeros, zeros, f([1.0]), f([[1, 1]]), ref_log_probs=ref)
    assert_num(loss, -1.0)
    assert "kl" not in m


def test_kl_gradient():
    # d/dlogp [beta * (exp(ref - logp) - (ref - logp) - 1)] = beta * (1 - exp(ref - logp)).
    # logp 0, ref 1, A 0: grad = 0.5 * (1 - e) / 1 token.
    lp = f([[0.0]]).requires_grad_(True)
    loss, _ = clipped_surrogate(lp, f([[0.0]]), f([0.0]), f([[1]]), ref_log_probs=f([[1.0]]), beta=0.5)
    loss.backward()
    assert_num(lp.grad.item(), 0.5 * (1 - E))


# ---------------------------------------------------------------- metrics, shapes, padding, gradients


def test_metrics_count_only_masked_tokens():
    # tokens (ratio, A): (1.5, +1) high-clipped; (0.5, -1) low-clipped; (1.0, +1); (1.5, -1) not clipped;
    # (6.0, -1) not PPO-clipped but dual-clipped at c=3 (6 > 3). Masked: (0.5, -1), (1.5, +1) must not count.
    ratios = [1.5, 0.5, 1.0, 1.5, 6.0, 0.5, 1.5]
    lp = f([[math.log(r) for r in ratios]])
    adv = f([[1.0, -1.0, 1.0, -1.0, -1.0, -1.0, 1.0]])
    mask = f([[1, 1, 1, 1, 1, 0, 0]])
    loss, m = clipped_surrogate(lp, torch.zeros_like(lp), adv, mask, clip_ratio_c=3.0)
    assert_num(m["clip_frac_high"], 1 / 5)
    assert_num(m["clip_frac_low"], 1 / 5)
    assert_num(m["dual_clip_frac"], 1 / 5)
    assert_num(m["ratio_mean"], (1.5 + 0.5 + 1.0 + 1.5 + 6.0) / 5)  # 2.1
    # per token: -1.2, 0.8, -1.0, 1.5, 3.0 -> sum 3.1 / 5
    assert_num(loss, 3.1 / 5)
    assert all(not v.requires_grad for v in m.values())


def random_batch(seed, r=3, t=4):
    gen = torch.Generator().manual_seed(seed)
    lp = -torch.rand(r, t, generator=gen, dtype=F64)
    old = lp + 0.4 * (torch.rand(r, t, generator=gen, dtype=F64) - 0.5)
    adv = torch.randn(r, generator=gen, dtype=F64)
    mask = f([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]][:r])
    return lp, old, adv, mask


@pytest.mark.parametrize("mode", AGG_MODES)
def test_sequence_and_token_advantages_agree(mode):
    lp, old, adv, mask = random_batch(0)
    kw = dict(loss_agg_mode=mode, max_completion_length=4, clip_ratio_c=3.0, beta=0.04)
    kw["ref_log_probs"] = lp * 0.9
    loss_r, m_r = clipped_surrogate(lp, old, adv, mask, **kw)
    loss_rt, m_rt = clipped_surrogate(lp, old, adv[:, None].expand(-1, 4), mask, **kw)
    torch.testing.assert_close(loss_r, loss_rt, atol=0.0, rtol=0.0)
    assert m_r.keys() == m_rt.keys()
    for key in m_r:
        torch.testing.assert_close(m_r[key], m_rt[key], atol=0.0, rtol=0.0)


@pytest.mark.parametrize("mode", AGG_MODES)
def test_padding_invariance(mode):
    lp, old, adv, mask = random_batch(1)
    kw = dict(loss_agg_mode=mode, max_completion_length=8, epsilon_high=0.28, clip_ratio_c=3.0, beta=0.04)
    base, base_m = clipped_surrogate(lp, old, adv, mask, ref_log_probs=lp + 0.1, **kw)
    # four extra columns and the masked slots of the original ones hold arbitrary (finite) values.
    gen = torch.Generator().manual_seed(2)
    mask8 = torch.cat([mask, torch.zeros(3, 4, dtype=F64)], 1)

    def pad(x):
        junk = 6 * torch.rand(3, 8, generator=gen, dtype=F64) - 3
        return torch.where(mask8.bool(), torch.cat([x, x[:, :4]], 1), junk)

    loss, m = clipped_surrogate(pad(lp), pad(old), adv, mask8, ref_log_probs=pad(lp + 0.1), **kw)
    torch.testing.assert_close(loss, base, atol=1e-12, rtol=0.0)
    for key in base_m:
        torch.testing.assert_close(m[key], base_m[key], atol=1e-12, rtol=0.0)


@pytest.mark.parametrize(
    ("adv", "lp_pad", "old_pad"),
    [(-1.0, 0.0, -100.0), (1.0, 0.0, -100.0), (-1.0, float("nan"), 0.0), (-1.0, float("inf"), 0.0)],
)
def test_masked_nonfinite_or_overflowing_values_do_not_leak(adv, lp_pad, old_pad):
    # Token 1 is masked, so whatever it holds must not matter. With old = -100 its float32 ratio exp(100)
    # overflows to inf; for A < 0 the PPO term is +inf and inf * 0 (the mask) = NaN.
    # Only token 0 counts: ratio 0.9 -> loss -A * 0.9, grad -A * 0.9 / 1 token, masked grad 0.
    lp = torch.tensor([[math.log(0.9), lp_pad]], requires_grad=True)
    old, mask = torch.tensor([[0.0, old_pad]]), torch.tensor([[1.0, 0.0]])
    loss, m = clipped_surrogate(lp, old, torch.tensor([adv]), mask)
    loss.backward()
    assert abs(loss.item() + adv * 0.9) <= 1e-6, loss.item()
    assert abs(m["ratio_mean"].item() - 0.9) <= 1e-6, m
    torch.testing.assert_close(lp.grad, torch.tensor([[-adv * 0.9, 0.0]]), atol=1e-6, rtol=0.0)


def test_gradient_token_mean():
    # token-mean over 3 valid tokens, all ratios inside [0.8, 1.2]: d loss / d logp_ij = -A_i * r_ij / 3;
    # the masked token gets 0.
    ratios = f([[1.1, 0.9], [1.05, 1.0]])
    lp = ratios.log().requires_grad_(True)
    adv = f([2.0, -1.0])
    loss, _ = clipped_surrogate(lp, torch.zeros(2, 2, dtype=F64), adv, f([[1, 1], [1, 0]]))
    loss.backward()
    expected = f([[-2 * 1.1 / 3, -2 * 0.9 / 3], [1.05 / 3, 0.0]])
    torch.testing.assert_close(lp.grad, expected, atol=1e-12, rtol=0.0)
    # loss itself: (-2.2 - 1.8 + 1.05) / 3
    assert_num(loss, (-2.2 - 1.8 + 1.05) / 3)


# ---------------------------------------------------------------- errors


def test_invalid_arguments():
    x = torch.zeros(1, 2)
    a, mask = torch.ones(1), torch.ones(1, 2)
    with pytest.raises(ValueError, match="'token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'"):
        clipped_surrogate(x, x, a, mask, loss_agg_mode="mean")
    for c in (1.0, 0.5):
        with pytest.raises(ValueError, match="clip_ratio_c must be > 1"):
            clipped_surrogate(x, x, a, mask, clip_ratio_c=c)
    with pytest.raises(ValueError, match="max_completion_length"):
        clipped_surrogate(x, x, a, mask, loss_agg_mode="seq-mean-token-sum-norm")
