"""Pooled / per-variant advantages and reward diagnostics (tagrpo.core.advantages), checked by hand."""

from __future__ import annotations

import math
import statistics

import pytest
import torch

from tagrpo.core import group_diagnostics, pooled_advantages

NAN = float("nan")
SQRT3 = math.sqrt(3.0)


def t(rows):
    return torch.tensor(rows, dtype=torch.float32)


def close(actual, expected, atol=1e-6):
    torch.testing.assert_close(actual, t(expected), atol=atol, rtol=0.0)


# ---------------------------------------------------------------- pooled_advantages: hand-worked cases


def test_pool_scope_mixed_pool_unbiased_std():
    # pool [1, 0, 1, 1]: mean 0.75; deviations 0.25, -0.75, 0.25, 0.25; sum of squares 0.75;
    # unbiased var 0.75 / 3 = 0.25 -> std 0.5 (the biased std would be sqrt(0.1875) = 0.433).
    # eps=0: 0.25 / 0.5 = 0.5, -0.75 / 0.5 = -1.5.
    adv = pooled_advantages(t([[[1, 0], [1, 1]]]), scope="pool", eps=0.0)
    close(adv, [[[0.5, -1.5], [0.5, 0.5]]])


def test_pool_scope_eps_is_added_to_std():
    r = t([[[1, 0], [1, 1]]])
    # std 0.5 + eps 0.5 = 1.0 -> advantages are the plain deviations.
    close(pooled_advantages(r, eps=0.5), [[[0.25, -0.75], [0.25, 0.25]]])
    # default eps 1e-6: 0.25 / 0.500001 and -0.75 / 0.500001.
    a, b = 0.25 / 0.500001, -0.75 / 0.500001
    close(pooled_advantages(r), [[[a, b], [a, a]]])


def test_variant_scope_normalises_each_variant_alone():
    # variant 0 [1, 0]: mean 0.5, deviations +-0.5, unbiased var 0.5 / 1 -> std sqrt(0.5);
    # 0.5 / sqrt(0.5) = sqrt(0.5) = 0.7071068. variant 1 [1, 1] is uniform -> 0.
    s = math.sqrt(0.5)
    adv = pooled_advantages(t([[[1, 0], [1, 1]]]), scope="variant", eps=0.0)
    close(adv, [[[s, -s], [0.0, 0.0]]])


@pytest.mark.parametrize("scope", ["pool", "variant"])
@pytest.mark.parametrize("value", [0.0, 1.0, 0.7])
def test_uniform_pool_is_exactly_zero(scope, value):
    r = torch.full((2, 3, 4), value)
    adv = pooled_advantages(r, scope=scope)
    assert not torch.isnan(adv).any()
    assert torch.equal(adv, torch.zeros(2, 3, 4))


def test_uniform_original_inside_mixed_pool_is_rescued_by_pool_scope():
    r = t([[[0, 0], [1, 0]]])
    # pool [0, 0, 1, 0]: mean 0.25; deviations -0.25, -0.25, 0.75, -0.25; squares sum 0.75;
    # var 0.25 -> std 0.5; advantages -0.5, -0.5, 1.5, -0.5. q0's own responses get a signal.
    close(pooled_advantages(r, scope="pool", eps=0.0), [[[-0.5, -0.5], [1.5, -0.5]]])
    # variant scope: q0 [0, 0] uniform -> 0; q1 [1, 0] -> +-sqrt(0.5).
    s = math.sqrt(0.5)
    close(pooled_advantages(r, scope="variant", eps=0.0), [[[0.0, 0.0], [s, -s]]])


def test_nan_rewards_left_out_and_get_zero():
    r = t([[[1, NAN, 0], [0, 1, NAN]]])
    # valid pool [1, 0, 0, 1]: mean 0.5; deviations +-0.5; squares sum 1.0; var 1/3 -> std 1/sqrt(3);
    # advantages +-0.5 * sqrt(3) = +-0.8660254; NaN slots -> 0.
    # (Treating NaN as 0 would give mean 1/3 and different numbers.)
    h = 0.5 * SQRT3
    close(pooled_advantages(r, eps=0.0), [[[h, 0.0, -h], [-h, h, 0.0]]])
    # variant scope: q0 valid [1, 0] and q1 valid [0, 1] -> +-sqrt(0.5) each.
    s = math.sqrt(0.5)
    close(pooled_advantages(r, scope="variant", eps=0.0), [[[s, 0.0, -s], [-s, s, 0.0]]])


@pytest.mark.parametrize("scope", ["pool", "variant"])
@pytest.mark.parametrize("scale", ["std", "none"])
def test_single_valid_reward_or_all_nan_gives_zero(scope, scale):
    # pool has one valid reward (1); under variant scope q0 has one and q1 none. All -> 0, no NaN.
    adv = pooled_advantages(t([[[NAN, 1], [NAN, NAN]]]), scope=scope, scale=scale)
    assert torch.equal(adv, torch.zeros(1, 2, 2))


def test_scale_none_only_subtracts_mean():
    # pool [1, 0, 0, 0]: mean 0.25 -> 0.75, -0.25, -0.25, -0.25 (no division).
    close(pooled_advantages(t([[[1, 0], [0, 0]]]), scale="none"), [[[0.75, -0.25], [-0.25, -0.25]]])
    # variant scope: q0 [1, 0] mean 0.5 -> +-0.5; q1 uniform -> 0.
    close(pooled_advantages(t([[[1, 0], [0, 0]]]), scope="variant", scale="none"), [[[0.5, -0.5], [0, 0]]])
    # NaN: valid pool [2, 0, 1], mean 1 -> 1, -1, 0; NaN -> 0.
    close(pooled_advantages(t([[[2, NAN], [0, 1]]]), scale="none"), [[[1.0, 0.0], [-1.0, 0.0]]])


@pytest.mark.parametrize("scope", ["pool", "variant"])
def test_single_variant_is_plain_grpo(scope):
    r = t([[[1, 0, 0, 1]], [[1, 1, 0, 1]]])  # (B=2, 1, G=4)
    # group 1: mean 0.5, deviations +-0.5, squares 1.0, var 1/3 -> +-0.5*sqrt(3).
    # group 2: mean 0.75, deviations 0.25, 0.25, -0.75, 0.25; squares 0.75; var 0.25 -> std 0.5.
    h = 0.5 * SQRT3
    close(pooled_advantages(r, scope=scope, eps=0.0), [[[h, -h, -h, h]], [[0.5, 0.5, -1.5, 0.5]]])


def test_non_binary_rewards():
    # pool [-0.5, 3.5, -0.5, -0.5]: mean 0.5; deviations -1, 3, -1, -1; squares 12; var 4 -> std 2.
    close(pooled_advantages(t([[[-0.5, 3.5], [-0.5, -0.5]]]), eps=0.0), [[[-0.5, 1.5], [-0.5, -0.5]]])


def test_float64_and_int_inputs_return_float32():
    adv = pooled_advantages(torch.tensor([[[1, 0], [1, 1]]]), eps=0.0)  # int64 input
    assert adv.dtype == torch.float32
    close(adv, [[[0.5, -1.5], [0.5, 0.5]]])


# ---------------------------------------------------------------- invariances and a loop reference


def random_rewards(seed, shape=(5, 3, 4), nan_frac=0.15):
    gen = torch.Generator().manual_seed(seed)
    levels = torch.tensor([0.0, 0.25, 0.5, 1.0])
    r = levels[torch.randint(0, 4, shape, generator=gen)]
    r[torch.rand(shape, generator=gen) < nan_frac] = NAN
    return r


@pytest.mark.parametrize("scope", ["pool", "variant"])
def test_permuting_batch_permutes_output(scope):
    r = random_rewards(0, (6, 3, 4))
    perm = torch.randperm(6, generator=torch.Generator().manual_seed(1))
    assert torch.equal(pooled_advantages(r[perm], scope=scope), pooled_advantages(r, scope=scope)[perm])


def test_permuting_within_pool_permutes_output():
    b, v, g = 4, 3, 4
    r = random_rewards(2, (b, v, g))
    perm = torch.randperm(v * g, generator=torch.Generator().manual_seed(3))
    shuffled = r.reshape(b, v * g)[:, perm].reshape(b, v, g)
    expected = pooled_advantages(r).reshape(b, v * g)[:, perm].reshape(b, v, g)
    torch.testing.assert_close(pooled_advantages(shuffled), expected, atol=1e-6, rtol=0.0)


def loop_advantages(rewards, scope, scale, eps):
    """Reference: a plain Python loop over questions (and variants) with statistics.mean / stdev."""
    b, v, g = rewards.shape
    out = [[[0.0] * g for _ in range(v)] for _ in range(b)]
    for q in range(b):
        groups = (
            [[(n, i) for n in range(v) for i in range(g)]]
            if scope == "pool"
            else [[(n, i) for i in range(g)] for n in range(v)]
        )
        for cells in groups:
            vals = [float(rewards[q, n, i]) for n, i in cells if not math.isnan(float(rewards[q, n, i]))]
            if len(vals) < 2 or len(set(vals)) == 1:
                continue
            mu = statistics.mean(vals)
            sd = statistics.stdev(vals)  # unbiased
            for n, i in cells:
                x = float(rewards[q, n, i])
                if not math.isnan(x):
                    out[q][n][i] = (x - mu) if scale == "none" else (x - mu) / (sd + eps)
    return torch.tensor(out, dtype=torch.float32)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("scope", ["pool", "variant"])
@pytest.mark.parametrize("scale", ["std", "none"])
@pytest.mark.parametrize("eps", [1e-6, 1e-4])
def test_matches_python_loop(seed, scope, scale, eps):
    r = random_rewards(seed, (7, 3, 4), nan_frac=0.2)
    r[0] = 1.0  # one all-one pool
    r[1, :, :2] = NAN  # half of a pool missing
    expected = loop_advantages(r, scope, scale, eps)
    torch.testing.assert_close(pooled_advantages(r, scope, scale, eps), expected, atol=1e-6, rtol=1e-6)


def test_bad_modes_and_shapes():
    r = torch.zeros(1, 2, 2)
    with pytest.raises(ValueError, match="'pool', 'variant'"):
        pooled_advantages(r, scope="foo")
    with pytest.raises(ValueError, match="'std', 'none'"):
        pooled_advantages(r, scale="foo")
    with pytest.raises(ValueError, match=r"\(B, N\+1, G\)"):
        pooled_advantages(torch.zeros(2, 4))
    with pytest.raises(ValueError, match=r"\(B, N\+1, G\)"):
        pooled_advantages(torch.zeros(1, 2, 2, 2))
    with pytest.raises(ValueError, match=r"\(B, N\+1, G\)"):
        group_diagnostics(torch.zeros(2, 4))


# ---------------------------------------------------------------- group_diagnostics


def test_group_diagnostics_hand_worked():
    r = t(
        [
            [[0, 0], [0, 0]],  # q0: pool all zero (original all zero)
            [[1, 1], [1, 1]],  # q1: pool all one (original all one)
            [[0, 0], [1, 0]],  # q2: original uniform, pool mixed -> rescued
            [[1, 0], [1, 1]],  # q3: original mixed
        ]
    )
    # pool: all_zero {q0}, all_one {q1}, zero_std {q0, q1} -> 1/4, 1/4, 2/4.
    # original: all_zero {q0, q2}, all_one {q1}, zero_std {q0, q1, q2} -> 2/4, 1/4, 3/4.
    # variant groups uniform: q0 both, q1 both, q2 first only, q3 second only -> 6 of 8.
    # rescued {q2} -> 1/4; of the 3 uniform originals -> 1/3.
    # variant 0 rewards 0,0,1,1,0,0,1,0 -> 3/8; variant 1 rewards 0,0,1,1,1,0,1,1 -> 5/8.
    assert group_diagnostics(r) == {
        "pool/all_zero": 0.25,
        "pool/all_one": 0.25,
        "pool/zero_std": 0.5,
        "original/all_zero": 0.5,
        "original/all_one": 0.25,
        "original/zero_std": 0.75,
        "variant/zero_std": 0.75,
        "rescued": 0.25,
        "rescued_of_uniform": 1 / 3,
        "rescued/from_zero": 0.25,  # q2's original is all wrong
        "rescued/from_one": 0.0,
        "reward/variant_0": 0.375,
        "reward/variant_1": 0.625,
    }


def test_group_diagnostics_nan():
    r = t(
        [
            [[0, NAN], [NAN, 0]],  # valid pool [0, 0]: all zero; original [0]: one valid -> uniform
            [[1, NAN], [0, NAN]],  # valid pool [1, 0] mixed; original [1]: uniform -> rescued
        ]
    )
    # pool: all_zero 1/2, all_one 0, zero_std 1/2. original: all_zero 1/2, all_one 1/2, zero_std 2/2.
    # every variant group has one valid reward -> uniform: 4/4.
    # rescued {q1} -> 1/2, of 2 uniform originals -> 1/2.
    # variant 0 valid [0, 1] -> 0.5; variant 1 valid [0, 0] -> 0.
    d = group_diagnostics(r)
    assert d == {
        "pool/all_zero": 0.5,
        "pool/all_one": 0.0,
        "pool/zero_std": 0.5,
        "original/all_zero": 0.5,
        "original/all_one": 0.5,
        "original/zero_std": 1.0,
        "variant/zero_std": 1.0,
        "rescued": 0.5,
        "rescued_of_uniform": 0.5,
        "rescued/from_zero": 0.0,
        "rescued/from_one": 0.5,  # q1's one valid original reward is right
        "reward/variant_0": 0.5,
        "reward/variant_1": 0.0,
    }


def test_group_diagnostics_no_uniform_original_and_three_variants():
    # both originals mixed -> rescued_of_uniform falls back to 0.0 (no division by zero).
    r = t([[[1, 0], [1, 1], [0, 0]], [[0, 1], [0, 0], [1, 1]]])
    d = group_diagnostics(r)
    assert d["rescued"] == 0.0 and d["rescued_of_uniform"] == 0.0
    assert d["original/zero_std"] == 0.0 and d["pool/zero_std"] == 0.0
    # variant means: q0 [1, 0, 0, 1] -> 0.5; q1 [1, 1, 0, 0] -> 0.5; q2 [0, 0, 1, 1] -> 0.5.
    assert [d[f"reward/variant_{n}"] for n in range(3)] == [0.5, 0.5, 0.5]


def test_group_diagnostics_non_binary_uniform_and_all_nan():
    r = t(
        [
            [[0.5, 0.5], [0.5, 0.5]],  # uniform at 0.5: zero_std, neither all_zero nor all_one
            [[NAN, NAN], [NAN, NAN]],  # no valid reward: zero_std (vacuously uniform), not all_zero/all_one
            [[0.5, 0.5], [0.5, 1.0]],  # original uniform, pool mixed -> rescued
        ]
    )
    # pool zero_std {q0, q1} -> 2/3; original zero_std {q0, q1, q2} -> 1; rescued {q2} -> 1/3 and 1/3.
    # variant groups: all uniform but q2's second [0.5, 1.0] -> 5/6.
    # variant 0 valid 0.5 x4 -> 0.5; variant 1 valid 0.5, 0.5, 0.5, 1.0 -> 0.625.
    d = group_diagnostics(r)
    assert d == pytest.approx(
        {
            "pool/all_zero": 0.0,
            "pool/all_one": 0.0,
            "pool/zero_std": 2 / 3,
            "original/all_zero": 0.0,
            "original/all_one": 0.0,
            "original/zero_std": 1.0,
            "variant/zero_std": 5 / 6,
            "rescued": 1 / 3,
            "rescued_of_uniform": 1 / 3,
            "rescued/from_zero": 0.0,  # q2's original is uniform at 0.5: rescued, in neither half of the split
            "rescued/from_one": 0.0,
            "reward/variant_0": 0.5,
            "reward/variant_1": 0.625,
        },
        rel=0.0,
        abs=1e-7,
    )
