"""Gated pools and weighted rephrased rows (tagrpo.core.shaped_advantages), checked against values worked by hand.

Every case has eps=0 unless said, so the numbers are exact fractions of the unbiased standard deviation.
"""

from __future__ import annotations

import math

import pytest
import torch

from tagrpo.core import GATES, all_wrong, pooled_advantages, shaped_advantages

NAN = float("nan")
S = math.sqrt(0.5)  # +-0.5 / std of [1, 0] (unbiased: sqrt(0.5))


def t(rows):
    return torch.tensor(rows, dtype=torch.float32)


def close(actual, expected, atol=1e-6):
    torch.testing.assert_close(actual, t(expected), atol=atol, rtol=0.0)


def test_all_wrong_needs_a_valid_reward_and_every_valid_one_zero():
    groups = t([[0, 0], [0, 1], [1, 1], [NAN, 0], [NAN, NAN]])
    assert all_wrong(groups).tolist() == [True, False, False, True, False]


def test_gate_open_when_q0_is_all_wrong_keeps_the_pool():
    # pool [0, 0, 1, 0]: mean 0.25, deviations -0.25 x3 and 0.75, unbiased var 0.25 -> std 0.5.
    r = t([[[0, 0], [1, 0]]])
    close(shaped_advantages(r, eps=0.0, gate="q0_all_wrong"), [[[-0.5, -0.5], [1.5, -0.5]]])


def test_gate_closed_when_q0_is_mixed_gives_grpo_on_q0_and_nothing_to_the_rephrasings():
    # The pool would give [[0.5, -1.5], [0.5, 0.5]] (mean 0.75, std 0.5). Gated: q0 [1, 0] on its own,
    # mean 0.5, std sqrt(0.5) -> +-sqrt(0.5); the rephrased rows 0.
    r = t([[[1, 0], [1, 1]]])
    close(shaped_advantages(r, eps=0.0, gate="none"), [[[0.5, -1.5], [0.5, 0.5]]])
    close(shaped_advantages(r, eps=0.0, gate="q0_all_wrong"), [[[S, -S], [0.0, 0.0]]])


def test_gate_closed_when_q0_is_all_right_gives_no_signal_at_all():
    # q0 [1, 1] is uniform: GRPO's zero; the pool's mixed rewards are not used.
    r = t([[[1, 1], [0, 1]]])
    close(shaped_advantages(r, eps=0.0, gate="q0_all_wrong"), [[[0.0, 0.0], [0.0, 0.0]]])


def test_gate_per_question_in_one_batch():
    r = t([[[0, 0], [1, 0]], [[1, 0], [1, 1]]])  # question 0 open, question 1 closed
    close(shaped_advantages(r, eps=0.0, gate="q0_all_wrong"), [[[-0.5, -0.5], [1.5, -0.5]], [[S, -S], [0, 0]]])


def test_gate_with_unscorable_rows():
    # q0 [NaN, 0]: its one valid reward is 0 -> open. Valid pool [0, 1, 0]: mean 1/3, deviations -1/3, 2/3, -1/3,
    # squares 6/9, unbiased var 1/3 -> std 1/sqrt(3): -1/sqrt(3), 2/sqrt(3), -1/sqrt(3); the NaN row 0.
    r = t([[[NAN, 0], [1, 0]]])
    a = 1 / math.sqrt(3)
    close(shaped_advantages(r, eps=0.0, gate="q0_all_wrong"), [[[0.0, -a], [2 * a, -a]]])
    # q0 wholly unscorable: not all wrong (nothing valid) -> closed; q0 has < 2 valid rewards -> 0 everywhere.
    close(shaped_advantages(t([[[NAN, NAN], [1, 0]]]), eps=0.0, gate="q0_all_wrong"), [[[0, 0], [0, 0]]])


def test_gate_without_scaling_only_centres():
    close(shaped_advantages(t([[[1, 0], [1, 1]]]), scale="none", gate="q0_all_wrong"), [[[0.5, -0.5], [0, 0]]])


def test_rephrased_weight_scales_only_the_rephrased_rows():
    r = t([[[0, 0], [1, 0]]])  # pool advantages [[-0.5, -0.5], [1.5, -0.5]]
    close(shaped_advantages(r, eps=0.0, rephrased_weight=0.5), [[[-0.5, -0.5], [0.75, -0.25]]])
    close(shaped_advantages(r, eps=0.0, rephrased_weight=0.0), [[[-0.5, -0.5], [0.0, 0.0]]])
    # with the gate: the open question's rephrased rows weighted, a closed one's stay 0
    r2 = t([[[0, 0], [1, 0]], [[1, 0], [1, 1]]])
    close(shaped_advantages(r2, eps=0.0, gate="q0_all_wrong", rephrased_weight=0.5),
          [[[-0.5, -0.5], [0.75, -0.25]], [[S, -S], [0, 0]]])


def test_defaults_are_exactly_the_pooled_advantages():
    torch.manual_seed(0)
    r = torch.randint(0, 2, (5, 4, 3)).float()  # (B, N+1, G)
    r[0, 1, 2] = NAN
    for scope in ("pool", "variant"):
        assert torch.equal(shaped_advantages(r, scope=scope), pooled_advantages(r, scope=scope))


def test_weight_one_and_gate_open_everywhere_leave_ta_grpo_unchanged():
    torch.manual_seed(1)
    r = torch.randint(0, 2, (6, 3, 4)).float()  # (B, N+1, G)
    r[:, 0] = 0  # every q0 group all wrong: every gate open
    assert torch.equal(shaped_advantages(r, gate="q0_all_wrong"), pooled_advantages(r))


def test_bad_gate_and_weight_are_refused():
    with pytest.raises(ValueError, match="'none', 'q0_all_wrong'"):
        shaped_advantages(t([[[0, 1]]]), gate="q0_wrong")
    with pytest.raises(ValueError, match="rephrased_weight must be >= 0"):
        shaped_advantages(t([[[0, 1]]]), rephrased_weight=-0.5)
    assert GATES == ("none", "q0_all_wrong")
