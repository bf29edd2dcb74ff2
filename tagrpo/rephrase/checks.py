"""Equivalence checks a rephrasing must pass before it is accepted, and cleaning of raw LLM replies.

:func:`check_rephrasing` runs, in order (the first failure is the rejection reason):

- ``nonempty``: something is left after cleaning;
- ``changed``: it differs from the original beyond case, whitespace and punctuation (``identical`` otherwise);
- ``asks``: when the original asks something (a ``?``, or a word such as *find*, *compute*, *what*, *how*),
  the rephrasing asks too (``question`` otherwise: a restatement of the facts that dropped the question);
- ``numbers``: the multiset of numbers is the original's. Numbers are digit runs (``\\frac{1}{2}`` gives 1 and 2,
  ``\\frac12`` too; ``1,000`` is 1000; ``2.50`` is 2.5). For the ``format`` type number words count as well
  (``three`` <-> 3, ``twenty-one`` <-> 21): the multisets must match with or without that conversion;
- ``variables`` (every type but ``rename``): each letter of the original's math (``$...$``, ``\\(...\\)``,
  ``\\[...\\]``, without LaTeX commands and ``\\text{}``) is still there, in math or as a single-letter or
  all-capitals word (``$ABC$`` may become ``triangle ABC``). ``rename`` may rename them; its numbers still count;
- ``renamed`` (``rename`` only): some variable letter or capitalised name of the original is gone, i.e. the
  rephrasing renamed something (``not_renamed`` otherwise);
- ``length``: ``min_ratio <= len(rephrasing) / len(original) <= max_ratio`` (whitespace normalised).

A rephrasing equal to another accepted rephrasing of the same question is rejected as ``duplicate`` by the
runner, which sees them all.

The optional solver check (``solver``) lives in the runner: it needs a model.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

CHECKS = ("nonempty", "changed", "asks", "numbers", "variables", "renamed", "length")
REASONS = (
    "empty", "identical", "question", "numbers", "variables", "not_renamed", "length", "duplicate", "parse", "solver"
)
_ASKING = re.compile(
    r"\?|\b(?:what|which|who|how|when|where|why|find|compute|calculate|determine|evaluate|solve|simplify|express"
    r"|prove|show|give|list|count|estimate|identify|state|write)\b",
    re.I,
)
_NAME = re.compile(r"\b[A-Z][a-z]{2,}\b")
_NOT_NAMES = set(
    "The This That These Those There Then Than Each Every Some Suppose Assume Consider Given Let Find Compute What"
    " Which Who How When Where Why Determine Evaluate Calculate Solve Simplify Express Prove Show Give List Count"
    " Estimate Identify State Write For And But Also After Before Now Here Its Their His Her They She One Two Three"
    " Four Five Six Seven Eight Nine Ten Eleven Twelve Thirteen Fourteen Fifteen Sixteen Seventeen Eighteen"
    " Nineteen Twenty Thirty Forty Fifty Hundred If In On At By Of To With From Into Over Under All Both Many"
    " Much Assuming Using Note Round Answer Recall Since While".split()
)
_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
    " seventeen eighteen nineteen"
).split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
WORD_VALUES = {w: i for i, w in enumerate(_ONES)} | {w: 20 + 10 * i for i, w in enumerate(_TENS)}
WORD_VALUES |= {"hundred": 100, "thousand": 1000, "million": 10**6}
_WORD = "(?:" + "|".join(sorted(WORD_VALUES, key=len, reverse=True)) + ")"
_WORD_RUN = re.compile(rf"\b{_WORD}(?:(?:[\s-]+|(?:(?<=hundred)|(?<=thousand))\s+and\s+){_WORD})*\b", re.I)
_FRAC_DIGITS = re.compile(r"\\[dt]?frac\s*(\d)\s*(\d)")
_THOUSANDS = re.compile(r"(?<=\d)(?:,|\{,\}|\\,)(?=\d{3}(?!\d))")
_NUMBER = re.compile(r"\d+(?:\.\d+)?|\.\d+")
_MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)
_TEXT_CMD = re.compile(r"\\(?:text\w*|mbox|mathrm|operatorname|label)\s*\{[^{}]*\}")
_COMMAND = re.compile(r"\\[A-Za-z]+")
_LETTER = re.compile(r"[A-Za-z]")
_PROSE_SYMBOL = re.compile(r"(?<![A-Za-z'])(?:[A-Za-z]|[A-Z]{2,4})(?![A-Za-z'])")
_FENCE = re.compile(r"^```[\w+-]*[ \t]*\n?(.*?)\n?[ \t]*```$", re.S)
_TAGS = re.compile(r"^<question>\s*(.*?)\s*</question>$", re.S)
_PREAMBLE = re.compile(
    r"^(?:\*\*|__)?(?:(?:sure|okay|ok|certainly)[,!.]?\s*)?(?:here(?:'s| is)\s+(?:the\s+|a\s+|your\s+)?)?"
    r"(?:(?:rephrased|rewritten|reworded|paraphrased|reformatted|reordered|renamed|transformed|new|modified"
    r"|equivalent)\s+)?(?:version\s+of\s+the\s+)?(?:question|problem|version)(?:\s+with\s[^:\n]*)?\s*:\s*"
    r"(?:\*\*|__)?\s*",
    re.I,
)
_QUOTES = (('"', '"'), ("\u201c", "\u201d"), ("\u00ab", "\u00bb"))


@dataclass
class CheckResult:
    """The checks passed, in order, and the first failure's reason (None when accepted) with a detail."""

    passed: list[str] = field(default_factory=list)
    reason: str | None = None
    detail: str = ""

    @property
    def accepted(self) -> bool:
        return self.reason is None


def normalize_ws(text: str) -> str:
    return " ".join(text.split())


def bare_text(text: str) -> str:
    """Lower case, letters, digits and math symbols only: what is left to compare for a copy."""
    return "".join(ch for ch in text.lower() if ch.isalnum() or ch in "+-*/^=<>()[]{}\\")


def names(text: str) -> set[str]:
    """Capitalised words outside math that are not common English words: the names a rename may change."""
    return set(_NAME.findall(_MATH.sub(" ", text))) - _NOT_NAMES


def renamable(text: str) -> bool:
    """Whether ``text`` has something a renaming can change: a letter in its math or a name."""
    return bool(math_letters(text) or names(text))


def clean_response(text: str) -> str:
    """Strip what LLMs wrap a rephrasing in: code fences, ``<question>`` tags, a preamble line, quotes."""
    text = (text or "").strip()
    for _ in range(6):
        before = text
        for pattern in (_FENCE, _TAGS):
            match = pattern.match(text)
            if match:
                text = match.group(1).strip()
        text = _PREAMBLE.sub("", text, count=1).strip()
        for left, right in _QUOTES:
            inner = text[len(left) : -len(right)]
            if len(text) >= 2 and text.startswith(left) and text.endswith(right) and left not in inner:
                text = inner.strip()
        if text == before:
            break
    return text


def _words_value_list(run: str) -> list[int]:
    """The numbers a run of number words spells: ``twenty one`` is [21]; ``one two`` is [1, 2]."""
    out, total, current = [], 0, None
    for word in re.findall(r"[a-z]+", run.lower()):
        if word == "and":
            continue
        value = WORD_VALUES[word]
        if value == 100:
            current = (current or 1) * 100
        elif value >= 1000:
            total, current = total + (current or 1) * value, 0
        elif current is None or current % 100 == 0 or (current % 100 >= 20 and current % 10 == 0 and value < 10):
            current = (current or 0) + value
        else:
            out.append(total + current)
            total, current = 0, value
    out.append(total + (current or 0))
    return out


def _canonical(number: str) -> str:
    whole, _, frac = number.partition(".")
    whole = whole.lstrip("0") or "0"
    frac = frac.rstrip("0")
    return f"{whole}.{frac}" if frac else whole


def extract_numbers(text: str, words: bool = False) -> Counter[str]:
    """The multiset of numbers in ``text`` (canonical strings); ``words`` also reads number words."""
    text = _THOUSANDS.sub("", _FRAC_DIGITS.sub(r"\\frac{\1}{\2}", text))
    found = Counter(_canonical(m) for m in _NUMBER.findall(text))
    if words:
        for match in _WORD_RUN.finditer(text):
            found.update(str(v) for v in _words_value_list(match.group(0)))
    return found


def math_letters(text: str) -> set[str]:
    """Letters used in the math spans of ``text`` (LaTeX commands and ``\\text{...}`` removed)."""
    letters: set[str] = set()
    for match in _MATH.finditer(text):
        body = next(g for g in match.groups() if g is not None)
        letters.update(_LETTER.findall(_COMMAND.sub(" ", _TEXT_CMD.sub(" ", body))))
    return letters


def symbol_letters(text: str) -> set[str]:
    """Letters that can stand for a variable anywhere in ``text``: in math, or as a one-letter or ALLCAPS word."""
    prose = _MATH.sub(" ", text)
    letters = math_letters(text)
    for word in _PROSE_SYMBOL.findall(_COMMAND.sub(" ", prose)):
        letters.update(word)
    return letters


def _diff(want: Counter[str], got: Counter[str]) -> str:
    missing, extra = want - got, got - want
    parts = [f"missing {', '.join(sorted(missing.elements()))}" if missing else ""]
    parts.append(f"extra {', '.join(sorted(extra.elements()))}" if extra else "")
    return "; ".join(p for p in parts if p)


def check_rephrasing(
    original: str, candidate: str, transform: str, min_ratio: float = 0.5, max_ratio: float = 2.0
) -> CheckResult:
    """Run the checks on a cleaned ``candidate`` of type ``transform``; see the module docstring."""
    result = CheckResult()
    orig, cand = normalize_ws(original), normalize_ws(candidate)
    if not cand:
        return CheckResult(result.passed, "empty", "nothing left after cleaning the reply")
    result.passed.append("nonempty")
    if cand == orig or bare_text(cand) == bare_text(orig):
        return CheckResult(result.passed, "identical", "same text as the original up to case and punctuation")
    result.passed.append("changed")
    if _ASKING.search(orig) and not _ASKING.search(cand):
        return CheckResult(result.passed, "question", "the original asks something, the rephrasing does not")
    result.passed.append("asks")
    want, got = extract_numbers(orig), extract_numbers(cand)
    if want != got and not (transform == "format" and extract_numbers(orig, True) == extract_numbers(cand, True)):
        return CheckResult(result.passed, "numbers", _diff(want, got))
    result.passed.append("numbers")
    if transform != "rename":
        lost = math_letters(orig) - symbol_letters(cand)
        if lost:
            return CheckResult(result.passed, "variables", f"missing {', '.join(sorted(lost))}")
        result.passed.append("variables")
    else:
        if not renamable(orig):
            return CheckResult(result.passed, "not_renamed", "the original has no variable or name to rename")
        if math_letters(orig) <= symbol_letters(cand) and names(orig) <= names(cand):
            return CheckResult(result.passed, "not_renamed", "every variable and name of the original is still there")
        result.passed.append("renamed")
    ratio = len(cand) / len(orig)
    if not min_ratio <= ratio <= max_ratio:
        return CheckResult(result.passed, "length", f"length ratio {ratio:.2f} outside [{min_ratio}, {max_ratio}]")
    result.passed.append("length")
    return result
