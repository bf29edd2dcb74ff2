"""The real-model study's task: sums ``a + b`` (``0 <= a, b < SIZE``) in four surface forms, split by problem.

A *problem* is the pair ``(a, b)``; its question in a form also draws a name and an item (the surface, not the
problem). Every problem belongs to exactly one of ``train``, ``validation`` and ``test`` by a seeded shuffle of
all ``SIZE**2`` pairs (``split``), so no held-out sum is ever trained on in any form (``tests/test_real_task.py``
asserts it). Forms, easiest to hardest for SmolLM2-135M-Instruct (``studies/results/real_study.md`` measures
them on validation problems):

- ``symbolic``: ``What is 12+7?``
- ``words``: ``What is twelve plus seven?``
- ``narrative``: ``Tom has 12 pens and gets 7 more. How many pens does Tom have?``
- ``spelled``: the narrative with number words.

TA-GRPO's rephrasings of a question are its other forms; the control's are the question's own form with another
name and item (``renamed``): the same difficulty, the same sample size.
"""

from __future__ import annotations

import random

SIZE = 20  # operands 0..19: 400 problems, the symbolic form in SmolLM2-135M's mixed band
SPLIT_SIZES = {"train": 200, "validation": 60, "test": 140}
SPLIT_SEED = 20
ONES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
         "nineteen")
NAMES = ("Tom", "Ann", "Raj", "Mia", "Leo", "Zoe", "Sam", "Ivy")
ITEMS = ("apples", "pears", "coins", "books", "shells", "cards", "pens", "stones")
FORMS = ("symbolic", "words", "narrative", "spelled")


def word(n: int) -> str:
    """``n`` (0..99) in English words: ``seventeen``, ``forty-two``."""
    if not 0 <= n < 100:
        raise ValueError(f"word: {n} is outside 0..99")
    if n < 20:
        return (ONES + TEENS)[n]
    tens = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")[n // 10 - 2]
    return tens if n % 10 == 0 else f"{tens}-{ONES[n % 10]}"


def render(a: int, b: int, form: str, name: str = "Tom", item: str = "pens") -> str:
    if form == "symbolic":
        return f"What is {a}+{b}?"
    if form == "words":
        return f"What is {word(a)} plus {word(b)}?"
    if form == "narrative":
        return f"{name} has {a} {item} and gets {b} more. How many {item} does {name} have?"
    if form == "spelled":
        return f"{name} has {word(a)} {item} and gets {word(b)} more. How many {item} does {name} have?"
    raise ValueError(f"form {form!r}: valid forms are {', '.join(FORMS)}")


def split(name: str) -> list[tuple[int, int]]:
    """The problems of one split, in a fixed order; the three splits partition all ``SIZE**2`` pairs."""
    if name not in SPLIT_SIZES:
        raise ValueError(f"split {name!r}: valid splits are {', '.join(SPLIT_SIZES)}")
    pairs = [(a, b) for a in range(SIZE) for b in range(SIZE)]
    random.Random(SPLIT_SEED).shuffle(pairs)
    start = 0
    for key, size in SPLIT_SIZES.items():
        if key == name:
            return pairs[start:start + size]
        start += size
    raise AssertionError("unreachable")


def questions(split_name: str, q0: str, plan: str, seed: int, count: int | None = None) -> list[dict]:
    """Rows of ``tagrpo train``: the first ``count`` problems of the split in a seed's order, q0 in form ``q0``;
    ``plan`` ``main`` rephrases into the other forms, ``control`` into q0's form renamed."""
    if plan not in ("main", "control"):
        raise ValueError(f"plan {plan!r}: valid plans are main, control")
    rng = random.Random(seed)
    problems = split(split_name)
    rng.shuffle(problems)
    rows = []
    for a, b in problems[:count]:
        name, item = rng.choice(NAMES), rng.choice(ITEMS)
        if plan == "main":
            rephrasings = [render(a, b, f, name, item) for f in FORMS if f != q0]
        else:
            others = [(n, it) for n in NAMES for it in ITEMS if n != name and it != item]
            rephrasings = [render(a, b, q0, *pick) for pick in rng.sample(others, len(FORMS) - 1)]
        rows.append({"id": f"{split_name}-{a}-{b}", "prompt": render(a, b, q0, name, item), "answer": str(a + b),
                     "rephrasings": rephrasings, "a": a, "b": b, "name": name, "item": item})
    return rows
