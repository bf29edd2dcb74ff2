"""A small built-in arithmetic world: ``a + b`` with single digits, asked in several equivalent surface forms.

The forms are equivalent by construction (the same two numbers, the same sum), yet a model pretrained mostly on
the symbolic form finds the others harder: the premise of TA-GRPO, cheaply reproduced on CPU.
"""

from __future__ import annotations

import random

WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
FORMS = ("symbolic", "words", "narrative", "swapped")


def render(a: int, b: int, form: str) -> str:
    """The question ``a + b`` in one surface form."""
    if form == "symbolic":
        return f"{a}+{b}="
    if form == "swapped":
        return f"{b}+{a}="
    if form == "words":
        return f"{WORDS[a]} plus {WORDS[b]} ="
    if form == "narrative":
        return f"Tom has {a} apples and gets {b} more. Apples="
    raise ValueError(f"form={form!r} is not valid; expected one of: {', '.join(map(repr, FORMS))}")


def parse(text: str) -> tuple[int, int]:
    """Recover ``(a, b)`` from any rendering (used by the tests to prove the forms equivalent)."""
    if text.startswith("Tom has "):
        words = text.split()
        return int(words[2]), int(words[6])
    if " plus " in text:
        left, right = text.rstrip(" =").split(" plus ")
        return WORDS.index(left), WORDS.index(right)
    left, right = text.rstrip("=").split("+")
    return int(left), int(right)


def solution(a: int, b: int) -> str:
    return f" \\boxed{{{a + b}}}"


def question_rows(count: int, seed: int, original_form: str = "narrative", num_rephrasings: int = 3):
    """Rephrased-question rows (``id``, ``prompt``, ``answer``, ``rephrasings``, ``form``) with q0 in
    ``original_form`` and the rephrasings in the other forms."""
    rng = random.Random(seed)
    others = [f for f in FORMS if f != original_form]
    rows = []
    for i in range(count):
        a, b = rng.randrange(10), rng.randrange(10)
        reph = [render(a, b, others[n % len(others)]) for n in range(num_rephrasings)]
        rows.append(
            {
                "id": f"add-{seed}-{i}",
                "prompt": render(a, b, original_form),
                "answer": str(a + b),
                "rephrasings": reph,
                "form": original_form,
            }
        )
    return rows


def corpus(count: int, seed: int, weights: dict[str, float]) -> list[tuple[str, str]]:
    """(prompt, completion) pairs for supervised pretraining, forms drawn with ``weights``."""
    rng = random.Random(seed)
    forms, probs = zip(*weights.items(), strict=True)
    out = []
    for _ in range(count):
        a, b = rng.randrange(10), rng.randrange(10)
        out.append((render(a, b, rng.choices(forms, probs)[0]), solution(a, b)))
    return out
