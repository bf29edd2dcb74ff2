"""Rephrased data sets built into the package, known by name: ``tagrpo probe --data toy_regime`` reads one of
these where it would otherwise read a file, a saved data set or a hub id.

A higher layer registers them (the toy world's ``toy_world`` and ``toy_regime``: :mod:`tagrpo.toy.plugins`, imported
on the registry's first use, see :mod:`tagrpo.common.registry`). A loader returns rows ``{id, prompt, answer,
rephrasings}`` and, per rephrasing, its type in ``rephrasing_provenance`` (``[{"type": ...}]``, as ``tagrpo
rephrase`` writes it); it takes the keyword options its registration names (``hard_share``) and no others. A
registration may also name sampling defaults for the data set (its models' template and response length).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tagrpo.common.errors import InputError
from tagrpo.common.registry import Registry


@dataclass(frozen=True)
class NamedData:
    """A built-in data set: ``loader(**options) -> rows``, the option names it accepts and sampling defaults."""

    loader: Callable[..., list[dict]]
    options: tuple[str, ...] = ()
    description: str = ""
    defaults: dict = field(default_factory=dict)


NAMED_DATA: Registry[NamedData] = Registry()


def register_data(name: str, loader: Callable[..., list[dict]], options: tuple[str, ...] = (),
                  description: str = "", defaults: dict | None = None) -> None:
    """Make ``load_named(name, **options)`` return ``loader(**options)``; a second registration replaces the first.
    ``defaults``: sampling settings for the data set (``{"template": "plain", "max_new_tokens": 36}``)."""
    NAMED_DATA[name] = NamedData(loader, tuple(options), description, dict(defaults or {}))


def is_named(name: str) -> bool:
    return isinstance(name, str) and name in NAMED_DATA


def named_defaults(name: str) -> dict:
    """The sampling defaults of the built-in data set ``name`` ({} for any other data)."""
    return dict(NAMED_DATA[name].defaults) if is_named(name) else {}


def load_named(name: str, **options) -> list[dict]:
    """The rows of the built-in data set ``name``; options it does not take (and are not None) are refused by name."""
    spec = NAMED_DATA[name]
    given = {k: v for k, v in options.items() if v is not None}
    extra = sorted(set(given) - set(spec.options))
    if extra:
        takes = ", ".join(f"--{o.replace('_', '-')}" for o in spec.options) or "no options"
        raise InputError(f"data {name!r} does not take --{extra[0].replace('_', '-')} (it takes {takes})")
    return spec.loader(**given)
