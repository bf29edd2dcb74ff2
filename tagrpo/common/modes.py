"""Validation of named modes: every mode argument raises a ValueError that lists the valid values."""

from __future__ import annotations

from collections.abc import Sequence

from tagrpo.common.errors import InputError, closest


def check_mode(name: str, value: str, valid: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``valid``; otherwise raise an ``InputError`` (a ValueError) naming the
    valid ones and the closest of them."""
    if value not in valid:
        choices = ", ".join(repr(v) for v in valid)
        raise InputError(f"{name}={value!r} is not valid; expected one of: {choices}{closest(value, valid)}")
    return value
