"""Checks that a library still has the private names, signatures and results a subclass relies on.

TAGRPOTrainer (TRL) and TAGRPORayTrainer (verl) override private methods and read private state. When a release
renames one, the symptom is an unpack error deep in a step or an override that is silently never called. The
contract of each subclass (``tagrpo.trainer.contract``, ``tagrpo.integrations.verl.contract``) is a list of
``Clause`` checks; ``enforce`` runs them when the trainer is built and fails with one sentence per broken clause,
naming what changed. The build-time checks are cheap: names, signatures (``method``, ``attribute``) and, for verl
only, source text (``mentions``). The number of values a method returns is checked where tagrpo receives them
(``arity``); what TRL's methods return and do is checked by running them (``tagrpo.trainer.contract.behaviour``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass

_source = functools.lru_cache(maxsize=None)(inspect.getsource)  # several clauses read one (long) TRL method


class ContractError(RuntimeError):
    """An installed library no longer has something a tagrpo subclass relies on."""


@dataclass(frozen=True)
class Clause:
    """One thing relied on: ``check()`` returns None when it holds, else the sentence saying what changed."""

    what: str
    check: Callable[[], str | None]


def method(owner: object, name: str, params: Iterable[str], label: str) -> Clause:
    """``owner.name`` (a class's method or a module's function) exists, is callable and takes ``params`` (in this
    order, after ``self``; more may follow)."""
    params = tuple(params)

    def check() -> str | None:
        func = getattr(owner, name, None)
        if not callable(func):
            return f"{label}'s `{name}` is gone"
        have = [p for p in inspect.signature(func).parameters if p != "self"]
        if tuple(have[: len(params)]) != params:
            return f"{label}'s `{name}` now takes ({', '.join(have)}); tagrpo calls it with ({', '.join(params)})"
        return None

    return Clause(f"{label}.{name}{params}", check)


def mentions(owner: type, name: str, snippets: Iterable[str], label: str, meaning: str) -> Clause:
    """The source of ``owner.name`` contains every one of ``snippets`` (``meaning`` says why tagrpo needs it)."""
    snippets = tuple(snippets)

    def check() -> str | None:
        func = getattr(owner, name, None)
        if func is None:
            return f"{label}'s `{name}` is gone"
        source = _source(func)
        missing = [s for s in snippets if s not in source]
        if missing:
            shown = ", ".join(f"`{s}`" for s in missing)
            return f"{label}'s `{name}` no longer contains {shown} ({meaning})"
        return None

    return Clause(f"{label}.{name} mentions {snippets}", check)


def arity_problem(result: object, fields: tuple[str, ...], label: str, name: str) -> str | None:
    """None when ``result`` is a tuple of ``len(fields)`` values, else the sentence saying what ``name`` now returns."""
    if isinstance(result, tuple) and len(result) == len(fields):
        return None
    found = f"{len(result)} values" if isinstance(result, tuple) else f"a {type(result).__name__}"
    return f"{label}'s `{name}` now returns {found}; tagrpo expects {len(fields)}: ({', '.join(fields)})"


def arity(result: object, fields: tuple[str, ...], label: str, name: str) -> tuple:
    """``result`` (what ``label``'s ``name`` returned), checked to be a tuple of the values ``fields``; a
    ``ContractError`` naming the change otherwise, before an unpack fails somewhere less clear."""
    problem = arity_problem(result, fields, label, name)
    if problem is not None:
        raise ContractError(problem)
    return result


def attribute(obj: object, name: str, label: str, kind: type | None = None) -> Clause:
    """``obj`` has attribute ``name`` (of type ``kind`` when given)."""

    def check() -> str | None:
        if not hasattr(obj, name):
            return f"{label} no longer has `{name}`"
        if kind is not None and not isinstance(getattr(obj, name), kind):
            return f"{label}'s `{name}` is now a {type(getattr(obj, name)).__name__}, not a {kind.__name__}"
        return None

    return Clause(f"{label}.{name}", check)


def problems(clauses: Iterable[Clause]) -> list[str]:
    """The sentences of the clauses that do not hold (empty when all hold)."""
    return [msg for clause in clauses if (msg := clause.check()) is not None]


def enforce(clauses: Iterable[Clause], library: str, version: str, subclass: str) -> None:
    """Raise ``ContractError`` listing every broken clause; nothing when all hold."""
    broken = problems(clauses)
    if broken:
        listed = "\n".join(f"- {msg}" for msg in broken)
        raise ContractError(
            f"{subclass} relies on {library} internals that changed in the installed {library} {version}:\n{listed}\n"
            f"Install the {library} version pinned in tagrpo's pyproject.toml, or report this with the lines above."
        )
