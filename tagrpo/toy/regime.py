"""The regime world: the embedded world's problems with two-digit numbers and a knob for how many are hard.

A problem is "someone has ``a`` things, gets ``b`` more and gives ``c`` away; how many now?", answer ``a + b - c``,
with ``a, b`` in 10..59 and ``c`` in 1..9: 11 to 117, no answer more likely than 2% (a blind guess's best rate,
``blind_guess_rate``). It renders in the forms of ``tagrpo.toy.world`` with two-digit number words
(``forty-two``):

- ``symbolic``: ``42+13-5=``
- ``words``: ``forty-two plus thirteen minus five =``
- ``narrative``: ``Tom has 42 apples, gets 13 more and gives 5 away. How many apples?``
- ``reordered``: the narrative with the facts in another order
- ``spelled``: the narrative with number words, q0's form

**Why some problems are hard.** The words of the tens in ``HIDDEN_TENS`` (``forty``, ``fifty``) never occur in the
pretraining corpus (``corpus`` leaves every word rendering of such a number out; digits of every number are in
it). A problem whose ``a`` or ``b`` has a hidden tens word (``is_hard``) is then one whose q0 the base model cannot
read, while its symbolic rephrasing is as easy as any other problem's: the paper's premise, made structural.
GRPO on q0 alone has no signal on such a problem (all its samples are wrong); a pool with the symbolic rephrasing
has one, and anchoring it on q0 is what could teach the model to read q0.

**Why RL can learn the rest.** The base's corpus solves spelled stories carelessly: a share ``SLIP`` of their
solutions add the ``c`` given away instead of subtracting it (``corpus(slip=...)``, the default of
``regime_base.RegimePretrainConfig.slip``), so the base answers a readable q0 correctly about half the time, and
wrongly by one decision that a reward can correct. On bases without the slip the q0 errors are misreadings and
slips of arithmetic spread over every number, and GRPO did not raise pass@1 at any rate or budget tried
(``studies/results/regime_mix_probe.md``; the first regime study and its RL check, on the first base).

**The knob** ``hard_share`` is the share of problems drawn from the hard ones (``sample_problem``), for training
and evaluation alike: 0 gives a world without hidden words in any question, 1 a world of hard questions only.
Whether "hard" problems really have 0 correct of 64 base samples, and whether the base solves their symbolic form,
is measured, not assumed (``studies/toy_premise.py``).

**Two solution strategies.** The corpus solves a problem either by adding first, `` 42+13=55; 55-5=50.``, or by
subtracting first, `` 42-5=37; 37+13=50.``; ``strategy_of`` reads which one a correct response used, so diversity
can be measured as the entropy of the strategies among correct responses (a slipped subtract-first solution,
`` 42+5=47; ...``, reads as adding first, but it is never correct).

Splits: every triple ``(a, b, c)`` belongs to ``train``, ``validation`` or ``test`` (7:1:2, a fixed hash); the
corpus and the training questions come from ``train`` only, settings are chosen on ``validation``.
"""

from __future__ import annotations

import math
import random
import re
import zlib
from collections import Counter
from dataclasses import dataclass

from tagrpo.common.errors import InputError
from tagrpo.common.modes import check_mode
from tagrpo.toy import world
from tagrpo.toy.world import ITEMS, NAMES, WORDS, form_patterns, parse_forms

FORMS = ("symbolic", "words", "narrative", "reordered", "spelled")
WORD_FORMS = ("words", "spelled")
TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
TENS = {2: "twenty", 3: "thirty", 4: "forty", 5: "fifty"}
HIDDEN_TENS = (4, 5)
OPERANDS = range(10, 60)  # a and b
TAKEN = range(1, 10)  # c
SPLITS = ("train", "validation", "test")
STRATEGIES = ("add_first", "subtract_first")


def number_words(n: int) -> str:
    """``n`` in words, 1..59: ``five``, ``thirteen``, ``forty``, ``forty-two``."""
    if not 0 <= n < 60:
        raise ValueError(f"number words cover 0..59, got {n}")
    if n < 10:
        return WORDS[n]
    if n < 20:
        return TEENS[n - 10]
    tens, units = divmod(n, 10)
    return TENS[tens] + (f"-{WORDS[units]}" if units else "")


def words_number(text: str) -> int:
    """The inverse of ``number_words``; raises ValueError on anything else."""
    if text in WORDS:
        return WORDS.index(text)
    if text in TEENS:
        return 10 + TEENS.index(text)
    head, dash, unit = text.partition("-")
    tens = {word: t for t, word in TENS.items()}
    if head not in tens or (dash and unit not in WORDS[1:]):
        raise ValueError(f"not a number in words: {text!r}")
    return 10 * tens[head] + (WORDS.index(unit) if unit else 0)


@dataclass(frozen=True)
class Problem(world.Problem):
    """The basic world's problem with two-digit numbers, two solution strategies and a ``hard`` flag."""

    @property
    def hard(self) -> bool:
        return is_hard(self.a, self.b, self.c)

    def solution(self, strategy: str = "add_first", slip: bool = False) -> str:
        """A step-by-step solution: `` 42+13=55; 55-5=50. \\boxed{50}`` (add first) or subtract first; with
        ``slip`` the ``c`` given away is added instead (`` 42+13=55; 55+5=60. \\boxed{60}``, a wrong answer)."""
        check_mode("strategy", strategy, STRATEGIES)
        c, op = (-self.c, "+") if slip else (self.c, "-")
        answer = self.a + self.b - c
        if strategy == "add_first":
            s = self.a + self.b
            steps = f"{self.a}+{self.b}={s}; {s}{op}{self.c}={answer}"
        else:
            s = self.a - c
            steps = f"{self.a}{op}{self.c}={s}; {s}+{self.b}={answer}"
        return f" {steps}. \\boxed{{{answer}}}"


def is_hard(a: int, b: int, c: int) -> bool:
    """True when ``a`` or ``b`` has a hidden tens word (``c`` is a single digit)."""
    return a // 10 in HIDDEN_TENS or b // 10 in HIDDEN_TENS


def split_of(a: int, b: int, c: int) -> str:
    """``train`` (7 in 10), ``validation`` (1 in 10) or ``test`` (2 in 10) by a fixed hash of the triple."""
    bucket = zlib.crc32(f"regime:{a},{b},{c}".encode()) % 10
    return "test" if bucket < 2 else "validation" if bucket == 2 else "train"


def triples(split: str | None = None, hard: bool | None = None) -> list[tuple[int, int, int]]:
    """Every triple of ``split`` (all when None), only the hard or only the easy ones when ``hard`` is set."""
    if split is not None:
        check_mode("split", split, SPLITS)
    return [
        (a, b, c)
        for a in OPERANDS
        for b in OPERANDS
        for c in TAKEN
        if (split is None or split_of(a, b, c) == split) and (hard is None or is_hard(a, b, c) == hard)
    ]


_TRIPLES: dict[tuple[str | None, bool | None], list[tuple[int, int, int]]] = {}


def sample_problem(rng: random.Random, split: str | None = None, hard_share: float = 0.5) -> Problem:
    """A problem of ``split``: hard with probability ``hard_share``, then a uniformly drawn triple of its kind."""
    if not 0.0 <= hard_share <= 1.0:
        raise InputError(f"hard_share must be in [0, 1], got {hard_share}")
    hard = rng.random() < hard_share
    key = (split, hard)
    if key not in _TRIPLES:
        _TRIPLES[key] = triples(split, hard)
    a, b, c = rng.choice(_TRIPLES[key])
    return Problem(a, b, c, rng.choice(NAMES), rng.choice(ITEMS))


def render(p: Problem, form: str) -> str:
    """The question in one surface form."""
    check_mode("form", form, FORMS)
    if form == "symbolic":
        return f"{p.a}+{p.b}-{p.c}="
    if form == "words":
        return f"{number_words(p.a)} plus {number_words(p.b)} minus {number_words(p.c)} ="
    a, b, c = (number_words(x) for x in (p.a, p.b, p.c)) if form == "spelled" else (p.a, p.b, p.c)
    if form == "reordered":
        return f"{p.name} gets {b} {p.item} and gives {c} away, having had {a}. How many {p.item}?"
    return f"{p.name} has {a} {p.item}, gets {b} more and gives {c} away. How many {p.item}?"


_PATTERNS = form_patterns(r"(\d+|[a-z]+(?:-[a-z]+)?)")


def parse(text: str) -> tuple[int, int, int]:
    """Recover ``(a, b, c)`` from any rendering; raises InputError on anything else."""
    return parse_forms(text, _PATTERNS, lambda v: int(v) if v.isdigit() else words_number(v))


_FIRST_STEP = re.compile(r"^\s*(\d+)([+-])(\d+)=")


def strategy_of(response: str) -> str | None:
    """``add_first`` or ``subtract_first`` from a correct response's first step, None when it has no ``x+y=`` /
    ``x-y=`` (a slipped subtract-first response, ``42+5=...``, reads as adding first)."""
    m = _FIRST_STEP.match(response)
    if m is None:
        return None
    return "add_first" if m.group(2) == "+" else "subtract_first"


def strategy_entropy(strategies: list[str | None]) -> float:
    """Entropy in bits of the strategies used (None left out); 0.0 for no responses, 1.0 for an even split."""
    counts = Counter(s for s in strategies if s is not None)
    total = sum(counts.values())
    return -sum(k / total * math.log2(k / total) for k in counts.values()) if total else 0.0


def blind_guess_rate() -> float:
    """The best rate of an answer-only guess: the largest share of one answer over all triples."""
    counts = Counter(a + b - c for a in OPERANDS for b in OPERANDS for c in TAKEN)
    return max(counts.values()) / sum(counts.values())


PLANS = world.PLANS
MIX = {"symbolic": 0.45, "narrative": 0.15, "reordered": 0.05, "words": 0.15, "spelled": 0.20}
SLIP = 0.4  # the shipped base's share of spelled solutions that slip (``corpus(slip=...)``, ``RegimePretrainConfig``)


def rephrase(p: Problem, num_rephrasings: int, plan: str = "main", original: str = "spelled") -> list[str]:
    """The basic world's rule (``world.rephrase``) with this world's renderings."""
    return world.rephrase(p, num_rephrasings, plan, original, render=render)


def question_rows(
    count: int,
    seed: int,
    hard_share: float,
    num_rephrasings: int = 3,
    plan: str = "main",
    split: str = "train",
    original: str = "spelled",
) -> list[dict]:
    """Rows ``id``, ``prompt`` (q0), ``answer``, ``rephrasings`` and ``hard`` (a hidden tens word in q0's numbers).

    The first ``k`` rows of a call are the rows of the same call with ``count=k``.
    """
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        p = sample_problem(rng, split, hard_share)
        rows.append(
            {
                "id": f"r{seed}-{i}",
                "prompt": render(p, original),
                "answer": str(p.answer),
                "rephrasings": rephrase(p, num_rephrasings, plan, original),
                "hard": p.hard,
            }
        )
    return rows


def corpus(
    count: int, seed: int, mix: dict[str, float] = MIX, add_first: float = 0.7, slip: float = 0.0
) -> list[tuple[str, str]]:
    """(question, solution) pairs from the train triples: forms drawn with ``mix``'s weights, a problem with a
    hidden tens word never in a word form; the add-first strategy with probability ``add_first``; a spelled (q0's
    form) solution slips, adding the ``c`` given away, with probability ``slip``."""
    if not 0.0 <= slip <= 1.0:
        raise InputError(f"slip must be in [0, 1], got {slip}")
    rng = random.Random(seed)
    forms, weights = zip(*mix.items(), strict=True)
    train = triples("train")
    pairs = []
    for _ in range(count):
        form = rng.choices(forms, weights)[0]
        while True:
            p = Problem(*rng.choice(train), rng.choice(NAMES), rng.choice(ITEMS))
            if not (form in WORD_FORMS and p.hard):
                break
        strategy = "add_first" if rng.random() < add_first else "subtract_first"
        slipped = slip > 0 and form == "spelled" and rng.random() < slip  # no draw without a slip: old corpora hold
        pairs.append((render(p, form), p.solution(strategy, slipped)))
    return pairs


def tokenizer_texts(count: int = 500, seed: int = 0) -> list[str]:
    """Every form of ``count`` problems with both solutions and every number in words: what the world's BPE
    merges are learned from, so that every word (the hidden ones too) is one token."""
    rng = random.Random(seed)
    texts = [" ".join(number_words(n) for n in range(60))]
    for _ in range(count):
        p = Problem(*rng.choice(triples()), rng.choice(NAMES), rng.choice(ITEMS))
        texts.extend(render(p, form) + p.solution(s) for form in FORMS for s in STRATEGIES)
    return texts
