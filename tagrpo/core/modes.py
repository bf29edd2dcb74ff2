"""Validation of named modes: every mode argument raises a ValueError that lists the valid values."""

from __future__ import annotations

from collections.abc import Sequence


def check_mode(name: str, value: str, valid: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``valid``; otherwise raise a ValueError naming the valid ones."""
    if value not in valid:
        choices = ", ".join(repr(v) for v in valid)
        raise ValueError(f"{name}={value!r} is not valid; expected one of: {choices}")
    return value
