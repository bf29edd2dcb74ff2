"""Multiple-choice reward (GPQA-Diamond): the option letter in the last ``\\boxed{}`` against the gold letter."""

from __future__ import annotations

import re

from tagrpo.rewards.math import completion_text, extract_boxed

LETTERS = "ABCDEFGHIJ"
_WRAPPER = re.compile(r"^\\(?:text|textbf|textrm|mathrm|mathbf|mbox)\s*\{(.*)\}$", re.S)
_PREFIX = re.compile(r"^(?:(?:the\s+)?(?:final\s+)?(?:answer|option|choice)\s*(?:is)?\s*[:=]?\s*)", re.I)
_LETTER = re.compile(rf"^[(\[]?([{LETTERS}])(?:[)\]]|(?=[.:\s])|$)")


def parse_choice(answer: str) -> str | None:
    """The option letter of a boxed answer: ``B``, ``(B)``, ``\\text{B}``, ``B. text``, ``B) text``, ``Option B``.

    Letters are upper case ``A``-``J``; anything else (``AB``, ``Both``, ``b``) gives None.
    """
    s = answer.strip().replace("\\$", "").replace("$", "").strip()
    while (m := _WRAPPER.match(s)) is not None:
        s = m.group(1).strip()
    s = _PREFIX.sub("", s)
    while (m := _WRAPPER.match(s)) is not None:
        s = m.group(1).strip()
    m = _LETTER.match(s)
    return m.group(1) if m else None


def extract_choice(response: str) -> str | None:
    """The option letter in the last ``\\boxed{}`` of ``response``, or None."""
    boxed = extract_boxed(response) if response is not None else None
    return parse_choice(boxed) if boxed is not None else None


def is_choice_correct(response: str, letter) -> bool:
    """Whether the boxed option letter of ``response`` is ``letter`` (``"B"`` or ``"(B)"`` both work)."""
    if letter is None:
        return False
    gold = parse_choice(str(letter))
    return gold is not None and extract_choice(response) == gold


def choice_reward(completions, answer, **kwargs) -> list[float]:
    """TRL reward function: 1.0 when the boxed option letter matches ``answer``, else 0.0."""
    return [float(is_choice_correct(completion_text(c), a)) for c, a in zip(completions, answer, strict=True)]
