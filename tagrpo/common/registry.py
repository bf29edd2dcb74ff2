"""Registries that a lower layer keeps and a higher one fills, and the plug-in modules that fill them.

The rephrase backends, the rephrase question sources and the built-in benchmarks live in the layers that use them
(``rephrase``, ``data``), yet the toy world above them adds a backend, a source and a benchmark. A lower layer may
not import a higher one, and importing the package should not load the toy world, so the package root only names
its plug-in modules (:func:`declare_plugins`, ``tagrpo/__init__.py``) and every :class:`Registry` imports the
named modules the first time it is used (read, listed, filled or emptied): a plug-in's entries are there before
anyone looks, and a later registration of the same name replaces the plug-in's.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from typing import TypeVar

V = TypeVar("V")
_PENDING: list[str] = []  # declared plug-in modules not imported yet, in declaration order
_LOCK = threading.RLock()  # another thread waits for a plug-in that is being imported


def declare_plugins(*modules: str) -> None:
    """Have the registries import ``modules`` (``"tagrpo.toy.plugins"``) when one of them is first used."""
    with _LOCK:
        _PENDING.extend(m for m in modules if m not in _PENDING)


def load_plugins() -> None:
    """Import every declared plug-in module not imported yet. A module that fails to import stays pending, so the
    next use of a registry raises again rather than go on without its entries."""
    with _LOCK:
        while _PENDING:
            name = _PENDING.pop(0)  # popped first: the module's own registrations come back here
            try:
                importlib.import_module(name)
            except BaseException:
                _PENDING.insert(0, name)
                raise


class Registry(MutableMapping[str, V]):
    """A name -> entry mapping that loads the declared plug-ins (:func:`load_plugins`) before any use."""

    def __init__(self, entries: Mapping[str, V] | None = None) -> None:
        self._entries: dict[str, V] = dict(entries or {})

    def __getitem__(self, name: str) -> V:
        load_plugins()
        return self._entries[name]

    def __setitem__(self, name: str, entry: V) -> None:
        load_plugins()
        self._entries[name] = entry

    def __delitem__(self, name: str) -> None:
        load_plugins()
        del self._entries[name]

    def __contains__(self, name: object) -> bool:
        load_plugins()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        load_plugins()
        return iter(list(self._entries))

    def __len__(self) -> int:
        load_plugins()
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({list(self)!r})"
