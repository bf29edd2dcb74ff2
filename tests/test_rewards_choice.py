"""The multiple-choice (GPQA-Diamond) reward: the option letter in the last boxed answer."""

from __future__ import annotations

import pytest

from tagrpo.rewards import choice_reward, extract_choice, is_choice_correct, parse_choice

ACCEPTED = [
    ("The answer is $\\boxed{B}$.", "B", "plain"),
    ("$\\boxed{(B)}$", "B", "parenthesised"),
    ("$\\boxed{\\text{B}}$", "B", "text"),
    ("$\\boxed{\\text{(B)}}$", "B", "text-parenthesised"),
    ("$\\boxed{\\textbf{B}}$", "B", "bold"),
    ("$\\boxed{B. 4.2 eV}$", "B", "letter-dot-text"),
    ("$\\boxed{B) the second}$", "B", "letter-paren-text"),
    ("$\\boxed{B: 12}$", "B", "letter-colon-text"),
    ("$\\boxed{\\text{B. Rayleigh scattering}}$", "B", "text-letter-dot-text"),
    ("$\\boxed{[D]}$", "D", "bracketed"),
    ("$\\boxed{ C }$", "C", "spaces"),
    ("$\\boxed{\\text{Answer: A}}$", "A", "answer-prefix"),
    ("$\\boxed{Option D}$", "D", "option-prefix"),
    ("First $\\boxed{A}$, then on reflection $\\boxed{C}$", "C", "last-box-wins"),
]

REJECTED = [
    ("The answer is B.", "no-box"),
    ("$\\boxed{}$", "empty-box"),
    ("$\\boxed{AB}$", "two-letters"),
    ("$\\boxed{Both}$", "word"),
    ("$\\boxed{b}$", "lower-case"),
    ("$\\boxed{42}$", "number"),
    ("$\\boxed{Z}$", "out-of-range-letter"),
]


@pytest.mark.parametrize(("response", "letter"), [c[:2] for c in ACCEPTED], ids=[c[2] for c in ACCEPTED])
def test_accepted_forms(response, letter):
    assert extract_choice(response) == letter
    assert is_choice_correct(response, letter)
    assert not is_choice_correct(response, "A" if letter != "A" else "B")


@pytest.mark.parametrize("response", [c[0] for c in REJECTED], ids=[c[1] for c in REJECTED])
def test_rejected_forms(response):
    assert extract_choice(response) is None
    assert not any(is_choice_correct(response, letter) for letter in "ABCD")


@pytest.mark.parametrize("gold", ["B", "(B)", " B ", "\\text{B}"])
def test_gold_letter_forms(gold):
    assert parse_choice(gold) == "B"
    assert is_choice_correct("\\boxed{B}", gold)


def test_none_gold_or_response():
    assert not is_choice_correct("\\boxed{B}", None)
    assert not is_choice_correct(None, "B")


def test_choice_reward_is_a_trl_reward_function():
    completions = ["\\boxed{A}", [{"role": "assistant", "content": "so \\boxed{(C)}"}], "I think D", "\\boxed{D}"]
    assert choice_reward(completions, ["A", "C", "D", "B"], prompts=["p"] * 4) == [1.0, 1.0, 0.0, 0.0]
    with pytest.raises(ValueError):
        choice_reward(["\\boxed{A}"], ["A", "B"])
