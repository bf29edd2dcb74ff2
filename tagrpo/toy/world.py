"""The embedded world: two-step arithmetic word problems in several equivalent surface forms.

A problem is "someone has ``a`` things, gets ``b`` more and gives ``c`` away; how many now?", answer
``a + b - c`` with single-digit ``a, b, c`` and a non-negative answer. Every problem renders in the forms below;
all of them parse back to the same ``(a, b, c)`` (the tests check this), so every rephrasing is equivalent by
construction. What differs is how often each form appears in the pretraining corpus, hence how hard the
pretrained model finds it: the premise of TA-GRPO holds by construction and can also be switched off (the
``renamed`` control, which changes only names and items).

Forms:
- ``symbolic``: ``3+5-2=``
- ``words``: ``three plus five minus two =`` (number words)
- ``narrative``: ``Tom has 3 apples, gets 5 more and gives 2 away. How many apples?``
- ``reordered``: the narrative with the facts in another order
- ``spelled``: the narrative with number words (absent from the pretraining corpus: the hard original form)

The ``main`` rephrasing plan turns a ``spelled`` original into symbolic, narrative and words renderings; the
``control`` plan only renames the person and the item, keeping the original's form and so its difficulty.

Splits: every number triple ``(a, b, c)`` belongs to ``train`` or ``test`` (about one in five) by a fixed hash
(``split_of``). The pretraining corpus and the RL training questions come from the train triples only, so the
held-out questions are problems the model has never seen in any form.
"""

from __future__ import annotations

import random
import re
import zlib
from dataclasses import dataclass

from tagrpo.common.errors import InputError

WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
NAMES = ("Tom", "Ann", "Raj", "Mia", "Leo", "Zoe", "Sam", "Ivy")
ITEMS = ("apples", "pears", "coins", "books", "shells", "cards", "pens", "stones")
FORMS = ("symbolic", "words", "narrative", "reordered", "spelled")
NARRATIVE_FORMS = ("narrative", "reordered", "spelled")
PLANS = {
    "main": ("symbolic", "narrative", "words"),
    "control": ("renamed",),
}


@dataclass(frozen=True)
class Problem:
    a: int
    b: int
    c: int
    name: str = "Tom"
    item: str = "apples"

    @property
    def answer(self) -> int:
        return self.a + self.b - self.c

    def solution(self) -> str:
        """The step-by-step solution the model learns: `` 3+5=8; 8-2=6. \\boxed{6}``."""
        s = self.a + self.b
        return f" {self.a}+{self.b}={s}; {s}-{self.c}={self.answer}. \\boxed{{{self.answer}}}"

    def renamed(self, k: int) -> Problem:
        """The same numbers with the k-th other person and item (k >= 1)."""
        name = NAMES[(NAMES.index(self.name) + k) % len(NAMES)]
        item = ITEMS[(ITEMS.index(self.item) + k) % len(ITEMS)]
        return type(self)(self.a, self.b, self.c, name, item)


SPLITS = ("train", "test")


def split_of(a: int, b: int, c: int) -> str:
    """``test`` for about one triple in five (a fixed hash), else ``train``."""
    return "test" if zlib.crc32(f"{a},{b},{c}".encode()) % 5 == 0 else "train"


def sample_problem(rng: random.Random, split: str | None = None) -> Problem:
    """A uniformly drawn problem, from the given split's triples (any triple when ``split`` is None)."""
    if split is not None and split not in SPLITS:
        raise InputError(f"split={split!r} is not valid; expected one of: {', '.join(map(repr, SPLITS))}")
    while True:
        a, b = rng.randrange(10), rng.randrange(10)
        c = rng.randrange(min(9, a + b) + 1)
        if split is None or split_of(a, b, c) == split:
            return Problem(a, b, c, rng.choice(NAMES), rng.choice(ITEMS))


def render(p: Problem, form: str) -> str:
    """The question in one surface form."""
    if form == "symbolic":
        return f"{p.a}+{p.b}-{p.c}="
    if form == "words":
        return f"{WORDS[p.a]} plus {WORDS[p.b]} minus {WORDS[p.c]} ="
    if form == "narrative":
        return f"{p.name} has {p.a} {p.item}, gets {p.b} more and gives {p.c} away. How many {p.item}?"
    if form == "reordered":
        return f"{p.name} gets {p.b} {p.item} and gives {p.c} away, having had {p.a}. How many {p.item}?"
    if form == "spelled":
        return (
            f"{p.name} has {WORDS[p.a]} {p.item}, gets {WORDS[p.b]} more and gives {WORDS[p.c]} away. "
            f"How many {p.item}?"
        )
    raise InputError(f"form={form!r} is not valid; expected one of: {', '.join(map(repr, FORMS))}")


def form_patterns(num: str) -> list[tuple[re.Pattern, tuple[int, int, int]]]:
    """The parsable forms' regular expressions, each number matched by ``num`` (one group), and where a, b, c sit."""
    return [
        (re.compile(rf"^{num}\+{num}-{num}=$"), (0, 1, 2)),
        (re.compile(rf"^{num} plus {num} minus {num} =$"), (0, 1, 2)),
        (re.compile(rf"^\w+ has {num} \w+, gets {num} more and gives {num} away\. How many \w+\?$"), (0, 1, 2)),
        (re.compile(rf"^\w+ gets {num} \w+ and gives {num} away, having had {num}\. How many \w+\?$"), (2, 0, 1)),
    ]


def parse_forms(text: str, patterns, number) -> tuple[int, int, int]:
    """``(a, b, c)`` of ``text`` by the first of ``patterns`` that matches, each number read by ``number``."""
    for pattern, order in patterns:
        m = pattern.match(text)
        if m:
            try:
                values = [number(v) for v in m.groups()]
            except ValueError as e:
                raise InputError(f"not a rendering of this world: {text!r} ({e})") from e
            return tuple(values[i] for i in order)
    raise InputError(f"not a rendering of this world: {text!r}")


_PATTERNS = form_patterns(r"(\d|" + "|".join(WORDS) + r")")


def parse(text: str) -> tuple[int, int, int]:
    """Recover ``(a, b, c)`` from any rendering; raises InputError (a ValueError) on anything else."""
    return parse_forms(text, _PATTERNS, lambda v: int(v) if v.isdigit() else WORDS.index(v))


def rephrase(
    p: Problem, num_rephrasings: int, plan: str = "main", original: str = "spelled", render=render
) -> list[str]:
    """The rule-based rephraser: N renderings that cycle through the plan's forms (``render`` draws a form).

    ``renamed`` keeps the ``original`` form and swaps in the n-th other person and item (n = 1..N, all distinct).
    """
    if plan not in PLANS:
        raise InputError(f"plan={plan!r} is not valid; expected one of: {', '.join(map(repr, PLANS))}")
    if plan == "control" and original not in NARRATIVE_FORMS:
        raise InputError(f"the control plan renames entities, which a {original!r} original does not have")
    forms = PLANS[plan]
    out = []
    for n in range(num_rephrasings):
        form = forms[n % len(forms)]
        out.append(render(p.renamed(n + 1), original) if form == "renamed" else render(p, form))
    return out


def question_rows(
    count: int,
    seed: int,
    num_rephrasings: int = 3,
    plan: str = "main",
    original: str = "spelled",
    split: str = "train",
):
    """Rows for ``tagrpo train``: ``id``, ``prompt`` (q0 in the ``original`` form), ``answer``, ``rephrasings``.

    The first ``k`` rows of a call are the rows of the same call with ``count=k``.
    """
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        p = sample_problem(rng, split)
        rows.append(
            {
                "id": f"w{seed}-{i}",
                "prompt": render(p, original),
                "answer": str(p.answer),
                "rephrasings": rephrase(p, num_rephrasings, plan, original),
            }
        )
    return rows


def corpus(count: int, seed: int, mix: dict[str, float]) -> list[tuple[str, str]]:
    """(question, solution) pairs for pretraining from the train triples, the forms drawn with the weights of
    ``mix``."""
    rng = random.Random(seed)
    forms, weights = zip(*mix.items(), strict=True)
    pairs = []
    for _ in range(count):
        p = sample_problem(rng, "train")
        pairs.append((render(p, rng.choices(forms, weights)[0]), p.solution()))
    return pairs


def tokenizer_texts(count: int = 500, seed: int = 0) -> list[str]:
    """Every form of ``count`` problems with their solutions, renamed too: the texts the world's BPE merges are
    learned from, so that every word of every form (q0's included) is one token."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        p = sample_problem(rng, "train")
        texts.extend(render(p, form) + p.solution() for form in FORMS)
    return texts


def benchmark_rows(limit: int | None = None, count: int = 64, seed: int = 2000) -> list[dict]:
    """``toy_world`` as ``tagrpo eval`` reads benchmarks: q0 of ``count`` held-out problems (the test triples)."""
    rows = [
        {"id": r["id"], "question": r["prompt"], "answer": r["answer"], "benchmark": "toy_world", "reward": "math"}
        for r in question_rows(count, seed=seed, num_rephrasings=0, split="test")
    ]
    return rows[:limit] if limit else rows
