"""The rule-based rephraser of the embedded world (:mod:`tagrpo.toy.world`), behind the same interface as an LLM.

A row's prompt is parsed back into a :class:`~tagrpo.toy.world.Problem` and its surface form, and the requested
transformation is rendered:

- ``paraphrase``: the ``narrative`` form (``reordered`` when the original is already the narrative);
- ``rename``: the original form with the (variant+1)-th other person and item (narrative forms only);
- ``format``: ``symbolic`` (``words`` when the original is symbolic; variant 1 takes the other one);
- ``reorder``: the ``reordered`` form (``narrative`` when the original is already reordered).

Every rendering parses back to the same ``(a, b, c)``, which :func:`check_toy` verifies exactly (it replaces the
numbers, variables and length heuristics, which do not fit forms such as ``3+5-2=``). Text that is not a
rendering of the world raises ValueError.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from tagrpo.common.errors import InputError
from tagrpo.rephrase.backends import Budget, Completion, Emit, Request
from tagrpo.rephrase.checks import CheckResult, normalize_ws
from tagrpo.toy.world import FORMS, ITEMS, NAMES, NARRATIVE_FORMS, Problem, parse, render

RULE_MODEL = "toy-world-rules"


def toy_form(text: str) -> tuple[Problem, str]:
    """The problem and the surface form of one rendering; ValueError when ``text`` is not one."""
    a, b, c = parse(text.strip())
    for form in FORMS:
        people = NAMES if form in NARRATIVE_FORMS else NAMES[:1]
        items = ITEMS if form in NARRATIVE_FORMS else ITEMS[:1]
        for name in people:
            for item in items:
                problem = Problem(a, b, c, name, item)
                if render(problem, form) == text.strip():
                    return problem, form
    raise ValueError(f"not a rendering of the toy world (names and items must be the world's): {text!r}")


def rule_rephrase(text: str, transform: str, variant: int = 0) -> str:
    """The ``transform`` of a toy-world question; see the module docstring."""
    problem, form = toy_form(text)
    if transform == "paraphrase":
        return render(problem, "reordered" if form == "narrative" else "narrative")
    if transform == "rename":
        if form not in NARRATIVE_FORMS:
            raise ValueError(f"cannot rename entities of a {form!r} question, which has none: {text!r}")
        return render(problem.renamed(variant + 1), form)
    if transform == "format":
        targets = ("words", "symbolic") if form == "symbolic" else ("symbolic", "words")
        return render(problem, targets[variant % 2])
    if transform == "reorder":
        return render(problem, "narrative" if form == "reordered" else "reordered")
    raise ValueError(f"transform={transform!r} is not a transformation type")


def rule_solve(text: str) -> str:
    """A solver for the world: the boxed answer of a rendering (no box when it does not parse)."""
    try:
        a, b, c = parse(text.strip())
    except ValueError:
        return "I cannot read this problem."
    return f"\\boxed{{{a + b - c}}}"


def check_toy(original: str, candidate: str) -> CheckResult:
    """``nonempty``, ``changed`` and ``parse``: the candidate parses back to the original's ``(a, b, c)``."""
    orig, cand = normalize_ws(original), normalize_ws(candidate)
    if not cand:
        return CheckResult([], "empty", "nothing left after cleaning the reply")
    if cand == orig:
        return CheckResult(["nonempty"], "identical", "same text as the original")
    try:
        same = parse(cand) == parse(orig)
    except ValueError as err:
        return CheckResult(["nonempty", "changed"], "parse", str(err))
    if not same:
        return CheckResult(["nonempty", "changed"], "parse", f"parses to {parse(cand)}, not {parse(orig)}")
    return CheckResult(["nonempty", "changed", "parse"])


def check_rule_rows(rows: list[dict], plan: list[tuple[str, int]]) -> None:
    """Raise before any work when a row is not a toy-world question or a planned transformation does not apply."""
    problems = []
    for row in rows:
        try:
            for transform, variant in plan:
                rule_rephrase(row["prompt"], transform, variant)
        except ValueError as err:
            problems.append(f"{row['id']}: {err}")
    if problems:
        listed = "; ".join(problems[:3]) + ("; ..." if len(problems) > 3 else "")
        raise InputError(
            f"the rule backend only rephrases the toy world's questions; {len(problems)} rows fail: {listed}"
        )


class RuleBackend:
    """The embedded world's rule-based rephraser; its solver reads the answer off the parsed problem."""

    kind = "rule"
    model = RULE_MODEL

    async def run(self, requests: Sequence[Request], emit: Emit, budget: Budget) -> None:
        for request in requests:
            if not budget.acquire():
                return
            if request.kind == "solve":
                emit(request, Completion(rule_solve(request.text)), None)
            else:
                emit(request, Completion(rule_rephrase(request.text, request.transform, request.variant)), None)
            await asyncio.sleep(0)  # let the cache writer commit what is done: a kill -9 then loses nothing

    async def aclose(self) -> None:
        return None
