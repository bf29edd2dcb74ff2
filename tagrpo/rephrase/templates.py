"""Prompt templates of the transformation types, the type plan of N rephrasings, and the template hash.

A template is the user message sent for one transformation; ``{question}`` marks where the original question goes
(substituted literally, so LaTeX braces need no escaping). A YAML or JSON file mapping type -> template replaces
the defaults of the types it names; its optional ``system`` key replaces the system message, and its optional
``stop`` key (a string or a list of up to four) ends every reply at the first of them: a few-shot template's reply
that goes on to a next example is cut there (sent to the server as ``stop``, and applied to the reply again, for a
server or backend that ignores it). The hash of the system message, a type's template and the stop strings is part
of that type's cache key: editing a template redoes its requests.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from tagrpo.common.errors import InputError
from tagrpo.common.modes import check_mode

TRANSFORM_TYPES = ("paraphrase", "rename", "format", "reorder")
PLACEHOLDER = "{question}"
SYSTEM = (
    "You rewrite math problems into equivalent forms. The rewritten problem must have exactly the same answer as"
    " the original. Never solve the problem, never add hints, and reply with the rewritten problem only."
)
_KEEP = "Keep every number, quantity, condition and the question being asked, so that the answer does not change."
_TAIL = "Do not solve it. Reply with the rewritten problem only.\n\n<question>\n" + PLACEHOLDER + "\n</question>"
DEFAULT_TEMPLATES: dict[str, str] = {
    "paraphrase": (
        "Paraphrase the math problem below: say the same thing in different words and sentence structure. Keep"
        f" every variable and mathematical expression exactly as written. {_KEEP} {_TAIL}"
    ),
    "rename": (
        "Rewrite the math problem below with its variables and named entities renamed: give each single-letter"
        " variable another letter and each person, object or place another name, consistently everywhere. Apart"
        f" from the renamed symbols, keep every expression as written. {_KEEP} {_TAIL}"
    ),
    "format": (
        "Rewrite the math problem below in another format: for example, write symbols in words or words as symbols,"
        " turn prose into a list of the given facts followed by the question (or a list into prose), or write LaTeX"
        f" as plain text (or plain text as LaTeX). {_KEEP} {_TAIL}"
    ),
    "reorder": (
        "Rewrite the math problem below with the given information in another order: for example, ask the question"
        " first and give the facts after it, or state the facts in a different sequence. Do not change any fact,"
        f" number or expression. {_KEEP} {_TAIL}"
    ),
}


def parse_types(types: str | None) -> tuple[str, ...]:
    """The comma list of transformation types (default: all four, in the order of ``TRANSFORM_TYPES``)."""
    if types is None or not types.strip():
        return TRANSFORM_TYPES
    names = tuple(t.strip() for t in types.split(",") if t.strip())
    for name in names:
        check_mode("types", name, TRANSFORM_TYPES)
    if len(set(names)) != len(names):
        raise InputError(f"types={types!r} names a type twice; N rephrasings cycle through the list already")
    return names


def type_plan(n: int, types: str | None = None) -> list[tuple[str, int]]:
    """``(type, variant)`` of each of the N rephrasings: the types in order, cycling when N exceeds them.

    ``variant`` counts earlier slots of the same type (0 the first time), so ``n=5`` with the default types gives
    ``paraphrase/0, rename/0, format/0, reorder/0, paraphrase/1``.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"n must be an int >= 1, got {n!r}")
    names = parse_types(types)
    return [(names[i % len(names)], i // len(names)) for i in range(n)]


def plan_for(plan: list[tuple[str, int]], types: str | None, renamable: bool) -> list[tuple[str, int]]:
    """The plan of one question. A question with no variable or name to rename (``renamable`` false) would only
    have its renaming rejected (``not_renamed``), a paid request for nothing: each ``rename`` slot asks instead
    for a listed type the plan lacks (``reorder`` with the default N=3), else for one more of the first other
    listed type, numbered after that type's planned slots. Without another listed type the slot stays."""
    others = [t for t in parse_types(types) if t != "rename"]
    if renamable or not others or all(t != "rename" for t, _ in plan):
        return plan
    planned = {t for t, _ in plan}
    spare = [t for t in others if t not in planned]
    extra = {t: sum(p == t for p, _ in plan) for t in others}
    out = []
    for transform, variant in plan:
        if transform == "rename":
            transform = spare.pop(0) if spare else others[0]
            variant, extra[transform] = extra[transform], extra[transform] + 1
        out.append((transform, variant))
    return out


class Templates(NamedTuple):
    """A run's prompts: the system message, type -> template, and the stop strings (empty: none)."""

    system: str
    by_type: dict[str, str]
    stop: tuple[str, ...] = ()


def _stop_strings(path: str, value) -> tuple[str, ...]:
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not 1 <= len(stops) <= 4 or not all(isinstance(s, str) and s for s in stops):
        raise InputError(f"{path}: 'stop' must be a non-empty string or a list of 1 to 4 of them, got {value!r}")
    return tuple(stops)


def load_templates(path: str | None = None) -> Templates:
    """The defaults, updated from a YAML or JSON file when given."""
    system, templates, stop = SYSTEM, dict(DEFAULT_TEMPLATES), ()
    if path is None:
        return Templates(system, templates)
    text = Path(path).read_text(encoding="utf-8")
    if Path(path).suffix.lower() == ".json":
        data = json.loads(text)
    else:
        import yaml

        data = yaml.safe_load(text)
    if not isinstance(data, Mapping):
        raise InputError(f"{path}: expected a mapping of type -> template, got {type(data).__name__}")
    for name, template in data.items():
        if name == "stop":
            stop = _stop_strings(path, template)
            continue
        if name != "system":
            check_mode(f"{path}: template type", str(name), TRANSFORM_TYPES)
        if not isinstance(template, str) or not template.strip():
            raise InputError(f"{path}: template {name!r} must be a non-empty string")
        if name == "system":
            system = template
        elif PLACEHOLDER not in template:
            raise InputError(f"{path}: template {name!r} has no {PLACEHOLDER} placeholder")
        else:
            templates[str(name)] = template
    return Templates(system, templates, stop)


def template_hash(system: str, template: str, stop: tuple[str, ...] = ()) -> str:
    """The first 16 hex digits of the SHA-256 of the system message, the template and the stop strings (none: the
    hash of the first two alone, as before stop strings existed)."""
    text = f"{system}\0{template}" + "".join(f"\0stop\0{s}" for s in stop)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cut_at_stop(text: str, stop: tuple[str, ...]) -> str:
    """``text`` up to the first occurrence of any stop string (all of it when none occurs)."""
    ends = [i for i in (text.find(s) for s in stop) if i >= 0]
    return text[: min(ends)] if ends else text


def build_messages(system: str, template: str, question: str) -> list[dict[str, str]]:
    """The chat messages of one rephrasing request."""
    return [{"role": "system", "content": system}, {"role": "user", "content": template.replace(PLACEHOLDER, question)}]


SOLVER_PROMPT = "Solve the following problem. Put the final answer inside \\boxed{}.\n\n" + PLACEHOLDER


def solver_messages(question: str) -> list[dict[str, str]]:
    """The chat messages that ask a solver model to answer a rephrasing."""
    return [{"role": "user", "content": SOLVER_PROMPT.replace(PLACEHOLDER, question)}]
