"""Anchoring: which variant's prompt conditions each row's policy and behaviour log-probs (tagrpo.core)."""

from __future__ import annotations

import pytest
import torch

from tagrpo.core import (
    ANCHORS,
    AnchoredPrompts,
    anchor_variants,
    engine_correction_allowed,
    select_prompt_tokens,
)

VALID = "'original', 'none', 'behavior'"


def long(rows):
    return torch.tensor(rows, dtype=torch.long)


# ---------------------------------------------------------------- anchor_variants


def test_anchors_constant():
    assert ANCHORS == ("original", "none", "behavior")


@pytest.mark.parametrize(
    ("anchor", "policy", "behavior"),
    [
        # TA-GRPO: everything on q0.
        ("original", [0, 0, 0, 0], [0, 0, 0, 0]),
        # no anchoring: everything on the generating prompt q_n.
        ("none", [0, 1, 2, 1], [0, 1, 2, 1]),
        # reading (b): current/reference on q0, old (behaviour) on q_n.
        ("behavior", [0, 0, 0, 0], [0, 1, 2, 1]),
    ],
)
def test_anchor_variants(anchor, policy, behavior):
    index = long([0, 1, 2, 1])
    pol, beh = anchor_variants(index, anchor)
    assert pol.dtype == torch.long and beh.dtype == torch.long
    assert torch.equal(pol, long(policy))
    assert torch.equal(beh, long(behavior))
    assert torch.equal(index, long([0, 1, 2, 1]))  # input not modified in place


def test_anchor_variants_invalid():
    with pytest.raises(ValueError, match=VALID):
        anchor_variants(long([0, 1]), "foo")


# ---------------------------------------------------------------- select_prompt_tokens

# Three rows, two variants (q0, q1), P = 5, left padding id 0.
#   row 0 (generated from q0): q0 = [_, _, 11, 12, 13]   q1 = [_, 21, 22, 23, 24]
#   row 1 (generated from q1): q0 = [_, _, _, 14, 15]    q1 = [_, _, 25, 26, 27]
#   row 2 (generated from q1): q0 = [_, _, _, 16, 17]    q1 = [31, 32, 33, 34, 35]
IDS = long(
    [
        [[0, 0, 11, 12, 13], [0, 21, 22, 23, 24]],
        [[0, 0, 0, 14, 15], [0, 0, 25, 26, 27]],
        [[0, 0, 0, 16, 17], [31, 32, 33, 34, 35]],
    ]
)
MASK = (IDS != 0).long()
INDEX = long([0, 1, 1])

# q0 of every row: columns 0 and 1 are padding in all three rows -> trimmed, width 3.
Q0_IDS = long([[11, 12, 13], [0, 14, 15], [0, 16, 17]])
Q0_MASK = long([[1, 1, 1], [0, 1, 1], [0, 1, 1]])
# generating prompts: row 0 q0, rows 1-2 q1; row 2 uses column 0 -> nothing trimmed, width 5.
QN_IDS = long([[0, 0, 11, 12, 13], [0, 0, 25, 26, 27], [31, 32, 33, 34, 35]])
QN_MASK = long([[0, 0, 1, 1, 1], [0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])


def check(actual, expected):
    assert actual.dtype == expected.dtype
    assert torch.equal(actual, expected), f"{actual} != {expected}"


@pytest.mark.parametrize(
    ("anchor", "policy", "behavior"),
    [
        ("original", (Q0_IDS, Q0_MASK), (Q0_IDS, Q0_MASK)),
        ("none", (QN_IDS, QN_MASK), (QN_IDS, QN_MASK)),
        ("behavior", (Q0_IDS, Q0_MASK), (QN_IDS, QN_MASK)),
    ],
)
def test_select_prompt_tokens(anchor, policy, behavior):
    out = select_prompt_tokens(IDS, MASK, INDEX, anchor)
    assert isinstance(out, AnchoredPrompts)
    check(out.policy_ids, policy[0])
    check(out.policy_mask, policy[1])
    check(out.behavior_ids, behavior[0])
    check(out.behavior_mask, behavior[1])


def test_select_trims_to_the_longest_selected_prompt():
    # Only row 1 (generated from q1) and row 0 (from q0) selected under "none": row 0 q0 starts at column 2,
    # row 1 q1 at column 2 -> columns 0-1 are padding in both and are trimmed.
    out = select_prompt_tokens(IDS[:2], MASK[:2], INDEX[:2], "none")
    check(out.policy_ids, long([[11, 12, 13], [25, 26, 27]]))
    check(out.policy_mask, long([[1, 1, 1], [1, 1, 1]]))
    # The same two rows, both generated from q1: row 0 q1 starts at column 1 -> width 4.
    out = select_prompt_tokens(IDS[:2], MASK[:2], long([1, 1]), "none")
    check(out.policy_ids, long([[21, 22, 23, 24], [0, 25, 26, 27]]))
    check(out.policy_mask, long([[1, 1, 1, 1], [0, 1, 1, 1]]))


def test_select_uses_mask_not_pad_id():
    # A real token whose id equals the pad id (0) is kept because the mask says it is a token.
    ids = long([[[7, 0, 5], [0, 8, 9]]])
    mask = long([[[0, 1, 1], [0, 1, 1]]])
    out = select_prompt_tokens(ids, mask, long([1]), "behavior")
    check(out.policy_ids, long([[0, 5]]))
    check(out.policy_mask, long([[1, 1]]))
    check(out.behavior_ids, long([[8, 9]]))
    check(out.behavior_mask, long([[1, 1]]))


def test_select_bool_mask_keeps_dtype():
    out = select_prompt_tokens(IDS, MASK.bool(), INDEX, "original")
    check(out.policy_ids, Q0_IDS)
    check(out.policy_mask, Q0_MASK.bool())


def test_select_invalid_anchor():
    with pytest.raises(ValueError, match=VALID):
        select_prompt_tokens(IDS, MASK, INDEX, "orig")


# ---------------------------------------------------------------- engine_correction_allowed


@pytest.mark.parametrize(("anchor", "allowed"), [("original", False), ("none", True), ("behavior", False)])
def test_engine_correction_allowed(anchor, allowed):
    assert engine_correction_allowed(anchor) is allowed


def test_engine_correction_invalid_anchor():
    with pytest.raises(ValueError, match=VALID):
        engine_correction_allowed("None")


def test_generating_is_an_alias_of_none_everywhere_a_config_is_read():
    from tagrpo.core import resolve_anchor
    from tagrpo.integrations.verl.settings import TAGRPOSettings

    assert resolve_anchor("anchor", "generating") == "none"
    assert resolve_anchor("anchor", "original") == "original"
    assert TAGRPOSettings(anchor="generating").anchor == "none"
    with pytest.raises(ValueError, match="'generating'"):
        resolve_anchor("anchor", "generated")
