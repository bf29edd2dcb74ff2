"""The engine's importance-sampling correction (tagrpo.core.engine): values worked by hand, one test per mode."""

from __future__ import annotations

import math

import pytest
import torch

from tagrpo.core import engine_correction_plan, engine_importance_ratio, off_policy_mask_conditionals

# Row 0: differences old - sampling = +0.5, 0.0 and a masked token; row 1: -1.0, NaN (no engine log-prob), 0.2.
OLD = torch.tensor([[-1.0, -2.0, -0.5], [-2.0, -1.0, -0.8]])  # (R, T)
SAMPLING = torch.tensor([[-1.5, -2.0, -0.3], [-1.0, float("nan"), -1.0]])  # (R, T)
MASK = torch.tensor([[1, 1, 0], [1, 1, 1]])  # (R, T)
E = math.exp


def ratio(mode, clip_min=None, clip_max=None):
    return engine_importance_ratio(OLD, SAMPLING, MASK, mode, clip_min, clip_max)


def test_token_ratios_unbounded():
    expected = torch.tensor([[E(0.5), 1.0, 1.0], [E(-1.0), 1.0, E(0.2)]])  # masked and NaN tokens: ratio 1
    torch.testing.assert_close(ratio("token_truncate"), expected)


def test_token_truncate_clamps_both_sides():
    expected = torch.tensor([[1.5, 1.0, 1.0], [0.5, 1.0, E(0.2)]])
    torch.testing.assert_close(ratio("token_truncate", 0.5, 1.5), expected)


def test_token_mask_zeroes_outside():
    expected = torch.tensor([[0.0, 1.0, 1.0], [0.0, 1.0, E(0.2)]])
    torch.testing.assert_close(ratio("token_mask", 0.5, 1.5), expected)


def test_sequence_ratio_is_the_product_over_tokens():
    # row 0: exp(0.5); row 1: exp(-1.0 + 0.2) = exp(-0.8)
    torch.testing.assert_close(ratio("sequence_truncate"), torch.tensor([[E(0.5)], [E(-0.8)]]))
    torch.testing.assert_close(ratio("sequence_truncate", 0.5, 1.5), torch.tensor([[1.5], [0.5]]))
    torch.testing.assert_close(ratio("sequence_mask", 0.5, 1.5), torch.tensor([[0.0], [0.0]]))
    torch.testing.assert_close(ratio("sequence_mask", None, 3.0), torch.tensor([[E(0.5)], [E(-0.8)]]))


def test_same_log_probs_give_ratio_one():
    out = engine_importance_ratio(OLD, OLD, MASK, "token_mask", 0.9, 1.1)
    torch.testing.assert_close(out, torch.ones_like(OLD))


def test_unknown_mode_lists_the_modes():
    with pytest.raises(ValueError, match="'token_truncate', 'token_mask', 'sequence_truncate', 'sequence_mask'"):
        ratio("token")


@pytest.mark.parametrize(
    ("anchor", "auto", "generating"),
    [("none", "trl", "trl"), ("behavior", "generating", "generating"), ("original", "off", "generating")],
)
def test_plan_per_anchor(anchor, auto, generating):
    assert engine_correction_plan(anchor, "auto") == auto
    assert engine_correction_plan(anchor, "generating") == generating
    assert engine_correction_plan(anchor, "off") == "off"


def test_plan_rejects_unknown_names():
    with pytest.raises(ValueError, match="'auto', 'generating', 'off'"):
        engine_correction_plan("original", "on")
    with pytest.raises(ValueError, match="'original', 'none', 'behavior'"):
        engine_correction_plan("q0", "auto")


@pytest.mark.parametrize(
    ("anchor", "engine", "same"),
    [
        ("none", True, True),
        ("none", False, True),
        ("original", False, True),  # old and current both on q0
        ("original", True, False),  # engine on q_n, current on q0
        ("behavior", False, False),  # old on q_n, current on q0
        ("behavior", True, False),
    ],
)
def test_off_policy_mask_conditionals(anchor, engine, same):
    assert off_policy_mask_conditionals(anchor, engine) is same
