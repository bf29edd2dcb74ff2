"""The project's own errors. ``tagrpo`` prints these as one line (exit status 2); anything else keeps its traceback.

``InputError`` is also a ``ValueError``, so code that catches ``ValueError`` around a config still works.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class TagrpoError(Exception):
    """A failure the user can act on, with a message that names the thing (file, flag, URL, model)."""


class InputError(TagrpoError, ValueError):
    """A bad value, file, row or field given by the user."""


def closest(value: str, valid: Iterable[str]) -> str:
    """``; did you mean 'x'?`` for the closest of ``valid`` to ``value``, or nothing."""
    match = difflib.get_close_matches(str(value), [str(v) for v in valid], n=1, cutoff=0.6)
    return f"; did you mean {match[0]!r}?" if match else ""
