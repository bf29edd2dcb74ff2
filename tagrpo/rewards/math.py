"""The math reward: last ``\\boxed{}`` of a response, normalised and checked against the reference with math-verify.

``is_correct(response, gold)`` takes the last ``\\boxed{...}`` / ``\\fbox{...}`` (or brace-less ``\\boxed 2``),
normalises both answers (``normalize_answer``) and compares them gold first, ``verify(parse(gold), parse(pred))``.
Identical normalised strings are equal without calling sympy. If math-verify says no and either side carries a
unit or a percent sign (``15\\text{ cm}^2``, ``12 inches``, ``4.2\\%``), the comparison is retried once with
the units stripped (``strip_units``). A response without a boxed answer scores 0.

Bounds: an answer longer than ``MAX_ANSWER_CHARS`` or with brackets nested deeper than ``MAX_NESTING`` never
reaches sympy (only the string and integer comparisons run): such an answer (``\\boxed{((((...}``) otherwise
costs math-verify its whole timeout, in every thread. math-verify bounds the rest with ``signal.alarm``
(``timeout``, 1 s by default), which only works in the main thread, where TRL calls reward functions. Called
from any other thread, ``is_correct`` runs math-verify with its timeouts disabled rather than raising; the
pre-check still bounds the known pathological shapes, and ``tagrpo.rewards.parallel`` (process workers with a
wall-clock deadline, what verl's threaded reward calls) bounds everything. math-verify's first LaTeX parse in a
process builds its grammar (about 1.3 s on a loaded 2-core machine): ``warm_up`` pays that once, untimed, before the
first timed comparison, so that a process's first answer is not scored wrong by the timeout.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import threading

from math_verify import parse, verify

from tagrpo.data.answers import extract_boxed

_WRAPPERS = ((r"\(", r"\)"), (r"\[", r"\]"))
_SUBS = [
    (re.compile(r"\\[dt]frac(?![A-Za-z])"), r"\\frac"),
    (re.compile(r"\\(?:displaystyle|left\.|right\.)"), ""),
    (re.compile(r"\\(?:left|right)(?![A-Za-z])"), ""),
    (re.compile(r"\\!"), ""),
    (re.compile(r"(?<=\d)(?:\{,\}|\\,)(?=\d{3}(?!\d))"), ","),
    (re.compile(r"\{,\}"), ","),
    (re.compile(r"(\\\\)|\\[,;: ]|~"), lambda m: m.group(1) or " "),  # keeps \\ (a matrix row break)
    (re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°|\\degree(?![A-Za-z])"), ""),
    (re.compile(r"(?<=\d)\s*(?:\\(?:text|mbox|mathrm)\{\s*)?degrees?\}?\s*$"), ""),
    (re.compile(r"(?<![\w.\\])(\d+(?:\.\d*)?|\.\d+)[eE]([+-]?\d+)(?![\w.])"), r"\1\\times 10^{\2}"),
    (re.compile(r"(?<=\d)\.(?!\d)"), ""),
    (re.compile(r"^([+-]?)0+(?=\d+$)"), r"\1"),
]
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_TEXT_UNIT = re.compile(r"\s*\\(?:text|textrm|mbox|mathrm|operatorname)\s*\{[^{}]*\}(?:\s*\^\s*\{?\d\}?)?\s*$")
_WORD_UNIT = re.compile(
    r"\s*(?:sq\.?\s*|square\s+|cubic\s+)?(?:cm|mm|km|meters?|metres?|inch(?:es)?|in\.|feet|foot|ft|yards?|yd|miles?"
    r"|units?|dollars?|cents?|hours?|hrs?|minutes?|mins?|seconds?|secs?|days?|weeks?|years?|km/h|mph|kg|grams?)"
    r"(?:\s*\^\s*\{?\d\}?)?\s*$"
)
_PERCENT = re.compile(r"\s*\\?%\s*$")
_INTEGER = re.compile(r"[+-]?\d+")
MAX_ANSWER_CHARS = 400
MAX_NESTING = 12


def too_complex(answer: str) -> bool:
    """Whether ``answer`` is too long or too deeply nested to hand to sympy (see the module doc)."""
    if len(answer) > MAX_ANSWER_CHARS:
        return True
    depth = deepest = 0
    for ch in answer:
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth = max(0, depth - 1)
    return deepest > MAX_NESTING


def normalize_answer(answer) -> str:
    """A canonical string for a final answer, before math-verify parses it.

    Drops ``$``/``\\(``/``\\[`` wrappers and a final period, ``\\left``/``\\right``, ``\\!`` and ``\\displaystyle``;
    ``\\dfrac``/``\\tfrac`` become ``\\frac``; degree marks go; ``1{,}000`` and ``1,000`` become ``1000`` when the
    whole answer is one such number; ``4.5e33`` becomes ``4.5\\times 10^{33}``; ``-1./3`` becomes ``-1/3``;
    leading zeros of integers go (AIME's ``025``). Numbers (AMC's float golds) are written without a spurious
    ``.0``.
    """
    if isinstance(answer, float) and answer.is_integer():
        answer = int(answer)
    s = str(answer).strip().replace("\\$", "").replace("$", "").strip()
    for left, right in _WRAPPERS:
        if s.startswith(left) and s.endswith(right):
            s = s[len(left) : -len(right)].strip()
    s = s.rstrip(". ").strip()
    for pattern, repl in _SUBS:
        s = pattern.sub(repl, s)
    s = s.strip()
    if _THOUSANDS.fullmatch(s):
        s = s.replace(",", "")
    return s


def strip_units(answer: str) -> str:
    """``answer`` without trailing units (``\\text{ cm}^2``, ``12 inches``) or percent sign, if a number precedes."""
    s = answer
    while True:
        stripped = _PERCENT.sub("", _WORD_UNIT.sub("", _TEXT_UNIT.sub("", s)))
        if stripped == s or not re.search(r"[\d}]\s*$", stripped):
            return s
        s = stripped


def _timeouts(seconds: float | None) -> int | None:
    """math-verify's timeout: whole seconds in the main thread, None (disabled) anywhere else."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        return None
    return max(1, math.ceil(seconds))


@functools.cache
def warm_up() -> None:
    """math-verify's one-time setup (its LaTeX grammar, sympy's first comparison), untimed, once per process: on our
    own constant, so no timeout is needed."""
    quiet = logging.getLogger("math_verify")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its "timeout is disabled" warning
    try:
        # a fraction and a symbol: each costs its first parse about 0.7-0.9 s under load
        verify(parse("$\\frac{1}{2 x+2}$", parsing_timeout=None), parse("$\\frac{1}{2x+2}$", parsing_timeout=None),
               timeout_seconds=None)
    finally:
        quiet.setLevel(level)


def _equivalent(gold: str, pred: str, timeout: int | None) -> bool:
    if gold == pred:
        return True
    if _INTEGER.fullmatch(gold) and _INTEGER.fullmatch(pred):
        return int(gold) == int(pred)  # what math-verify concludes, without sympy
    if too_complex(gold) or too_complex(pred):
        return False
    warm_up()
    gold_parsed = parse(f"${gold}$", parsing_timeout=timeout)
    pred_parsed = parse(f"${pred}$", parsing_timeout=timeout)
    if not gold_parsed or not pred_parsed:
        return False
    return bool(verify(gold_parsed, pred_parsed, timeout_seconds=timeout))


def answers_match(gold, predicted: str, timeout: float | None = 1) -> bool:
    """Whether the final answer ``predicted`` equals ``gold`` (gold first), after ``normalize_answer``."""
    gold_n, pred_n = normalize_answer(gold), normalize_answer(predicted)
    if not gold_n or not pred_n:
        return False
    seconds = _timeouts(timeout)
    if _equivalent(gold_n, pred_n, seconds):
        return True
    gold_u, pred_u = strip_units(gold_n), strip_units(pred_n)
    return (gold_u, pred_u) != (gold_n, pred_n) and _equivalent(gold_u, pred_u, seconds)


def is_correct(response: str, gold, timeout: float | None = 1) -> bool:
    """Whether the last boxed answer of ``response`` equals ``gold`` under math-verify.

    ``timeout`` bounds each math-verify parse and comparison (whole seconds, via ``signal.alarm``) in the main
    thread; off the main thread, or with ``timeout=None``, math-verify runs without timeouts (see the module doc).
    """
    if gold is None or response is None:
        return False
    predicted = extract_boxed(response)
    if predicted is None:
        return False
    return answers_match(gold, predicted, timeout)


def completion_text(completion) -> str:
    """The text of a TRL completion: a string, or the last message of a chat list."""
    if isinstance(completion, list):  # conversational: [{"role": "assistant", "content": ...}]
        return completion[-1]["content"]
    return completion


def math_reward(completions, answer, **kwargs) -> list[float]:
    """TRL reward function: 1.0 when the response's last boxed answer matches ``answer``, else 0.0."""
    return [float(is_correct(completion_text(c), a)) for c, a in zip(completions, answer, strict=True)]


_LAST_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def boxed_or_last_number_correct(response: str, gold) -> bool:
    """``is_correct`` when the response boxes an answer; otherwise whether the last number it writes equals
    ``gold``. A named, lenient check for small models that rarely box (SmolLM2-135M); never the math reward."""
    if response is None or gold is None:
        return False
    if extract_boxed(response) is not None:
        return is_correct(response, gold)
    numbers = _LAST_NUMBER.findall(response)
    return bool(numbers) and answers_match(gold, numbers[-1])


def boxed_or_last_number(completions, answer, **kwargs) -> list[float]:
    """TRL reward function of ``boxed_or_last_number_correct``."""
    texts = [completion_text(c) for c in completions]
    return [float(boxed_or_last_number_correct(t, a)) for t, a in zip(texts, answer, strict=True)]
