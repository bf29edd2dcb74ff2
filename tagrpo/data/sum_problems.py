"""The real-model studies' task: sums ``a + b`` (``0 <= a, b < SIZE``) in four surface forms, split by problem.

A *problem* is the pair ``(a, b)``; its question in a form also draws a name and an item (the surface, not the
problem). Two split schemes (``split``), each a seeded shuffle:

- ``pairs`` (the default; ``studies/real_study_v2.py``): the unit is the unordered pair ``{a, b}``, so a problem and
  its swap ``(b, a)`` always share a split, and the worked examples of the prompt templates (``EXAMPLES``: 3+1 and
  2+2, in both orders) are in no split. ``PAIR_SPLIT_SIZES`` counts unordered pairs; the problems of a split are
  its pairs in both orders (a double ``(a, a)`` once).
- ``ordered`` (the first study, ``studies/real_study.py``, kept to reproduce it): the unit is the ordered pair, so
  67 of its 140 test problems have their swap in train, and 3+1, the one-shot prompt's worked example, is a test
  problem (issue 33).

No held-out problem is ever trained on in any form (``tests/test_sum_problems.py`` asserts both schemes' partitions,
and for ``pairs`` the swaps and the examples). Forms, easiest to hardest for SmolLM2-135M-Instruct
(``studies/results/real_study.md`` measures them on validation problems):

- ``symbolic``: ``What is 12+7?``
- ``words``: ``What is twelve plus seven?``
- ``narrative``: ``Tom has 12 pens and gets 7 more. How many pens does Tom have?``
- ``spelled``: the narrative with number words.

TA-GRPO's rephrasings of a question are its other forms; the control's are the question's own form with another
name and item (``renamed``): the same difficulty, the same sample size.
"""

from __future__ import annotations

import itertools
import random

SIZE = 20  # operands 0..19: 400 problems, the symbolic form in SmolLM2-135M's mixed band
EXAMPLES = ((3, 1), (2, 2))  # the worked examples of tagrpo.data.prompts' templates: in no split of "pairs"
SCHEMES = ("pairs", "ordered")
PAIR_SPLIT_SIZES = {"train": 104, "validation": 30, "test": 74}  # "pairs": unordered pairs, 210 less EXAMPLES
SPLIT_SIZES = {"train": 200, "validation": 60, "test": 140}  # "ordered": ordered pairs (the first study)
SPLIT_SEED = 20
ONES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
         "nineteen")
NAMES = ("Tom", "Ann", "Raj", "Mia", "Leo", "Zoe", "Sam", "Ivy")
ITEMS = ("apples", "pears", "coins", "books", "shells", "cards", "pens", "stones")
FORMS = ("symbolic", "words", "narrative", "spelled")
MINUS_SPLIT_SIZES = {"train": 160, "validation": 60, "test": 140}  # problems a + b - c (``split_minus``)
# a, b in 1..MINUS_TOP, c at most the larger (385 units). Redesigned after the premise: with a, b in 1..19 and any
# c < a + b SmolLM2 got 4-6% right in every form, and 5-7% in a pilot with 1..9; giving away at most the larger
# amount brought a pilot to about 17%.
MINUS_TOP = 10
MINUS_EXAMPLE = (3, 1, 2)  # the worked example of tagrpo.data.prompts' twostep template: in no split
# The reasoning regime's fourth design, a + b - c with a + b at most MINUS_SMALL_CAP (124 units, split
# MINUS_SMALL_SPLIT_SIZES), piloted on its training problems at 5.0%; its units with a, b at most MINUS_FIVE_TOP, in
# the same splits (25 / 10 / 19 units), at 17.9%: the fifth design (``sum_minus_five``), each unit asked in every
# order whose story gives away at most what it got (34 / 15 / 25 problems). Its pilot saw training problems only.
MINUS_SMALL_CAP, MINUS_FIVE_TOP = 10, 5
MINUS_SMALL_SPLIT_SIZES = {"train": 60, "validation": 24, "test": 40}
THREE_SPLIT_SIZES = {"train": 38, "validation": 16, "test": 34}  # units {a, b, c} of ``split_three`` (88 in all)
# a + b + c, each in 1..THREE_TOP, at most THREE_CAP in all: the reasoning regime's third design. Pilots on fresh
# problems (100 x 2 samples, studies/results/real_study_v3_reasoning_pilots.md): any a, b, c in 1..9 7-12%, capped
# at 15 13%; the base adds single digits far better than it carries past 10.
THREE_TOP, THREE_CAP = 9, 15
THREE_EXAMPLE = (3, 1, 2)  # the worked example of tagrpo.data.prompts' threesum template: in no split


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


STEPS = {"-": ("minus", "then gives {} away"), "+": ("plus", "then gets {} more")}  # the second step's wordings


def render_two_step(a: int, b: int, c: int, form: str, name: str = "Tom", item: str = "pens", sign: str = "-") -> str:
    """The two-step problem ``a + b - c`` (``sign`` ``-``: the story gets ``b`` more, then gives ``c`` away) or
    ``a + b + c`` (``+``: then gets ``c`` more) in ``form``."""
    if sign not in STEPS:
        raise ValueError(f"sign {sign!r}: valid signs are {', '.join(STEPS)}")
    word_op, story = STEPS[sign]
    if form == "symbolic":
        return f"What is {a}+{b}{sign}{c}?"
    if form == "words":
        return f"What is {word(a)} plus {word(b)} {word_op} {word(c)}?"
    if form in ("narrative", "spelled"):
        x, y, z = (word(v) for v in (a, b, c)) if form == "spelled" else (a, b, c)
        return f"{name} has {x} {item} and gets {y} more, {story.format(z)}. How many {item} does {name} have?"
    raise ValueError(f"form {form!r}: valid forms are {', '.join(FORMS)}")


def render_minus(a: int, b: int, c: int, form: str, name: str = "Tom", item: str = "pens") -> str:
    return render_two_step(a, b, c, form, name, item, "-")


def render_three(a: int, b: int, c: int, form: str, name: str = "Tom", item: str = "pens") -> str:
    return render_two_step(a, b, c, form, name, item, "+")


def split_three(name: str) -> list[tuple[int, int, int]]:
    """The problems ``(a, b, c)`` of one split: a seeded draw of ``THREE_SPLIT_SIZES`` units (the multiset
    ``{a, b, c}``, each in 1..``THREE_TOP``, at most ``THREE_CAP`` in all; the template's worked example in none), each
    asked in every order of its operands, so no problem or a reordering of it is in two splits."""
    if name not in THREE_SPLIT_SIZES:
        raise ValueError(f"split {name!r}: valid splits are {', '.join(THREE_SPLIT_SIZES)}")
    top = range(1, THREE_TOP + 1)
    units = [(a, b, c) for a in top for b in top for c in top if a <= b <= c and a + b + c <= THREE_CAP
             and (a, b, c) != tuple(sorted(THREE_EXAMPLE))]
    assert len(units) == sum(THREE_SPLIT_SIZES.values()), len(units)
    random.Random(SPLIT_SEED).shuffle(units)
    start = 0
    for key, size in THREE_SPLIT_SIZES.items():
        if key == name:
            return [p for unit in units[start:start + size] for p in sorted(set(itertools.permutations(unit)))]
        start += size
    raise AssertionError("unreachable")


def split_minus(name: str, top: int = MINUS_TOP, cap: int | None = None,
                sizes: dict[str, int] = MINUS_SPLIT_SIZES, every_order: bool = False) -> list[tuple[int, int, int]]:
    """The two-step problems ``(a, b, c)`` of one split (``a, b`` in 1..``top``, ``a + b`` at most ``cap`` where it is
    set, ``1 <= c <= b``: the story gives away at most what it got), in a fixed order: a seeded draw of ``sizes``
    units (``{a, b}`` with ``c``) disjoint across splits, so no problem or its swap ``(b, a, c)`` is in two splits;
    the template's worked example is in none. A unit whose ``c`` exceeds the smaller operand is asked with the larger
    second; one whose ``c`` fits both, in the order of its own seeded choice, or (``every_order``) in both."""
    if name not in sizes:
        raise ValueError(f"split {name!r}: valid splits are {', '.join(sizes)}")
    example = (min(MINUS_EXAMPLE[:2]), max(MINUS_EXAMPLE[:2]), MINUS_EXAMPLE[2])
    units = [(a, b, c) for a in range(1, top + 1) for b in range(a, top + 1) for c in range(1, b + 1)
             if (a, b, c) != example and (cap is None or a + b <= cap)]
    if len(units) < sum(sizes.values()):
        raise ValueError(f"top={top}, cap={cap}: {len(units)} problems, fewer than the splits' {sum(sizes.values())}")
    random.Random(SPLIT_SEED).shuffle(units)
    start = 0
    for key, size in sizes.items():
        if key == name:
            chosen = units[start:start + size]
            if every_order:
                return [p for a, b, c in chosen for p in ([(a, b, c), (b, a, c)] if c <= a < b else [(a, b, c)])]
            return [(b, a, c) if c <= a and random.Random(f"{a},{b},{c}").random() < 0.5 else (a, b, c)
                    for a, b, c in chosen]
        start += size
    raise AssertionError("unreachable")


def _units(scheme: str) -> tuple[list, dict[str, int]]:
    """The shuffled units of ``scheme`` (ordered pairs, or unordered pairs as sorted tuples) and the split sizes."""
    if scheme == "ordered":
        units = [(a, b) for a in range(SIZE) for b in range(SIZE)]
        sizes = SPLIT_SIZES
    elif scheme == "pairs":
        examples = {tuple(sorted(e)) for e in EXAMPLES}
        units = [(a, b) for a in range(SIZE) for b in range(a, SIZE) if (a, b) not in examples]
        sizes = PAIR_SPLIT_SIZES
    else:
        raise ValueError(f"scheme {scheme!r}: valid schemes are {', '.join(SCHEMES)}")
    random.Random(SPLIT_SEED).shuffle(units)
    return units, sizes


def split(name: str, scheme: str = "pairs") -> list[tuple[int, int]]:
    """The problems of one split, in a fixed order. ``pairs``: the split's unordered pairs, each as ``(a, b)`` then
    ``(b, a)``; ``ordered``: the three splits partition all ``SIZE**2`` ordered pairs."""
    units, sizes = _units(scheme)
    if name not in sizes:
        raise ValueError(f"split {name!r}: valid splits are {', '.join(sizes)}")
    start = 0
    for key, size in sizes.items():
        if key == name:
            chosen = units[start:start + size]
            if scheme == "ordered":
                return chosen
            return [p for a, b in chosen for p in dict.fromkeys([(a, b), (b, a)])]
        start += size
    raise AssertionError("unreachable")


def questions(split_name: str, q0: str, plan: str, seed: int, count: int | None = None,
              scheme: str = "pairs") -> list[dict]:
    """Rows of ``tagrpo train``: the first ``count`` problems of the split (``scheme``) in a seed's order, q0 in form
    ``q0``; ``plan`` ``main`` rephrases into the other forms, ``control`` into q0's form renamed. A ``count`` above
    the split's size goes on with the split again in another order (ids ``...-e1``, ``-e2``: a second epoch,
    other names and items); up to the split's size the rows are those of the first epoch."""
    if plan not in ("main", "control"):
        raise ValueError(f"plan {plan!r}: valid plans are main, control")
    rng = random.Random(seed)
    problems = split(split_name, scheme)
    rng.shuffle(problems)
    order = [(a, b, "") for a, b in problems]
    epoch = 1
    while count is not None and len(order) < count:
        again = list(problems)
        random.Random(f"{seed}-epoch{epoch}").shuffle(again)
        order += [(a, b, f"-e{epoch}") for a, b in again]
        epoch += 1
    rows = []
    for a, b, tag in order[:count]:
        name, item = rng.choice(NAMES), rng.choice(ITEMS)
        if plan == "main":
            rephrasings = [render(a, b, f, name, item) for f in FORMS if f != q0]
        else:
            others = [(n, it) for n in NAMES for it in ITEMS if n != name and it != item]
            rephrasings = [render(a, b, q0, *pick) for pick in rng.sample(others, len(FORMS) - 1)]
        rows.append({"id": f"{split_name}-{a}-{b}{tag}", "prompt": render(a, b, q0, name, item),
                     "answer": str(a + b), "rephrasings": rephrasings, "a": a, "b": b, "name": name, "item": item})
    return rows


PROBLEMS = ("sum", "sum_minus", "sum_minus_five", "sum_three")  # what ``problem_rows`` can make


def _problems(which: str, problem: str, top: int | None = None) -> list[tuple[dict, str, str]]:
    """``(operands, id, answer)`` of split ``which``'s problems, in its fixed order (``top``: sum_minus's largest a,
    b; sum_three's are fixed here)."""
    if problem == "sum":
        return [({"a": a, "b": b}, f"{which}-{a}-{b}", str(a + b)) for a, b in split(which, "pairs")]
    if problem == "sum_minus":
        return [({"a": a, "b": b, "c": c}, f"{which}-{a}-{b}-{c}", str(a + b - c))
                for a, b, c in split_minus(which, top or MINUS_TOP)]
    if problem == "sum_minus_five":
        return [({"a": a, "b": b, "c": c}, f"{which}-{a}-{b}-{c}", str(a + b - c))
                for a, b, c in split_minus(which, 9, MINUS_SMALL_CAP, MINUS_SMALL_SPLIT_SIZES, every_order=True)
                if max(a, b) <= MINUS_FIVE_TOP]
    if problem == "sum_three":
        return [({"a": a, "b": b, "c": c}, f"{which}-{a}-{b}-{c}", str(a + b + c))
                for a, b, c in split_three(which)]
    raise ValueError(f"problem {problem!r}: valid problems are {', '.join(PROBLEMS)}")


def problem_rows(which: str, count: int | None = None, seed: int | str | None = None, problem: str = "sum",
                 top: int | None = None) -> list[dict]:
    """Split ``which``'s problems, each with its text in every form (``forms``) and a name and item of its own
    (seeded by the problem, so a rephrasing made once per question serves every seed), in a fixed order or a
    seed's (the real regimes' rows: ``tagrpo.experiments.tasks.real_regimes``)."""
    problems = _problems(which, problem, top)
    if seed is not None:
        random.Random(seed).shuffle(problems)
    if count is not None and count > len(problems):
        raise ValueError(f"{count} {which} problems asked for; the split holds {len(problems)}")
    rows = []
    for operands, name_id, answer in problems[:count]:
        rng = random.Random("+".join(map(str, operands.values())))
        name, item = rng.choice(NAMES), rng.choice(ITEMS)
        draw = {"sum": render, "sum_minus": render_minus, "sum_minus_five": render_minus,
                "sum_three": render_three}[problem]
        forms = {f: draw(*operands.values(), f, name, item) for f in FORMS}
        rows.append({"id": name_id, **operands, "answer": answer, "forms": forms})
    return rows


def texts(rows: list[dict], form: str) -> list[str]:
    """The rows' questions in ``form``."""
    return [r["forms"][form] for r in rows]
