"""Schema of a rephrased-question row and its validation.

A row is a mapping with:

- ``id``: a str or int, unique within the data set;
- ``prompt``: the original question ``q0``, a string that is non-empty after ``strip()``;
- ``answer``: the reference answer, a str, int or float (not None, not an empty string);
- ``rephrasings``: a list (possibly empty) of non-empty strings, the rephrased variants of ``q0``;
- any other keys: metadata, kept as they are.

:func:`validate_rows` checks every row and collects every problem, so one run over a malformed file reports
all of them; :func:`ensure_valid` raises :class:`InvalidDataError` when there are any.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tagrpo.common.errors import InputError

CANONICAL_FIELDS = ("id", "prompt", "answer", "rephrasings")
MAX_LISTED_PROBLEMS = 20


@dataclass(frozen=True)
class DataProblem:
    """One problem in one row: ``source`` names the data, ``row`` is 1-based (for JSONL: the line number)."""

    source: str
    row: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.source}, row {self.row}"
        if self.field:
            where += f", field {self.field!r}"
        return f"{where}: {self.message}"


class InvalidDataError(InputError):
    """Raised when data does not match the schema; ``problems`` holds every problem found."""

    def __init__(self, problems: Sequence[DataProblem]) -> None:
        self.problems: list[DataProblem] = list(problems)
        count = len(self.problems)
        lines = [f"  - {p}" for p in self.problems[:MAX_LISTED_PROBLEMS]]
        if count > MAX_LISTED_PROBLEMS:
            lines.append(f"  ... and {count - MAX_LISTED_PROBLEMS} more")
        header = f"invalid data: {count} problem{'s' if count != 1 else ''} found"
        super().__init__("\n".join([header, *lines]))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.problems,))


def _type_name(value: Any) -> str:
    return type(value).__name__


def _check_id(row: Mapping[str, Any], seen: dict[Any, int], number: int) -> str | None:
    if "id" not in row or row["id"] is None:
        return "missing id"
    value = row["id"]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return f"id must be a str or int, got {_type_name(value)}"
    if isinstance(value, str) and not value.strip():
        return "id is an empty string"
    if value in seen:
        return f"duplicate id {value!r} (first seen at row {seen[value]})"
    seen[value] = number
    return None


def _check_prompt(row: Mapping[str, Any]) -> str | None:
    if "prompt" not in row or row["prompt"] is None:
        return "missing question"
    value = row["prompt"]
    if not isinstance(value, str):
        return f"question must be a string, got {_type_name(value)}"
    if not value.strip():
        return "empty question"
    return None


def _check_answer(row: Mapping[str, Any]) -> str | None:
    if "answer" not in row or row["answer"] is None:
        return "missing answer"
    value = row["answer"]
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return f"answer must be a str, int or float, got {_type_name(value)}"
    if isinstance(value, str) and not value.strip():
        return "empty answer"
    if isinstance(value, float) and math.isnan(value):
        return "answer is NaN"
    return None


def _check_rephrasings(row: Mapping[str, Any], label: str) -> list[str]:
    """Problems with ``row["rephrasings"]``; ``label`` is the field's name in the source data."""
    if "rephrasings" not in row:
        return [f"missing {label} (expected a list of strings, possibly empty)"]
    value = row["rephrasings"]
    if not isinstance(value, list):
        return [f"{label} must be a list of strings, got {_type_name(value)}"]
    messages = []
    for index, item in enumerate(value):
        if not isinstance(item, str):
            messages.append(f"{label}[{index}] is not a string (got {_type_name(item)})")
        elif not item.strip():
            messages.append(f"{label}[{index}] is an empty string")
    return messages


def validate_rows(
    rows: Sequence[Any],
    source: str,
    *,
    row_numbers: Sequence[int] | None = None,
    field_names: Mapping[str, str] | None = None,
) -> list[DataProblem]:
    """Check every row against the schema and return all problems found (an empty list when valid).

    ``row_numbers`` gives the number reported for each row (default: 1-based position; loaders pass JSONL line
    numbers). ``field_names`` maps a canonical field to the name it had in the source data, so a problem names
    the column the user wrote (``{"prompt": "problem"}`` reports ``field 'problem'``).
    """
    if row_numbers is not None and len(row_numbers) != len(rows):
        raise ValueError(f"row_numbers has {len(row_numbers)} entries for {len(rows)} rows")
    names = {f: f for f in CANONICAL_FIELDS}
    names.update(field_names or {})
    numbers = row_numbers if row_numbers is not None else range(1, len(rows) + 1)
    problems: list[DataProblem] = []
    seen_ids: dict[Any, int] = {}
    for number, row in zip(numbers, rows, strict=True):
        if not isinstance(row, Mapping):
            problems.append(DataProblem(source, number, "", f"row is not a mapping (got {_type_name(row)})"))
            continue
        found = [
            (names["id"], _check_id(row, seen_ids, number)),
            (names["prompt"], _check_prompt(row)),
            (names["answer"], _check_answer(row)),
            *((names["rephrasings"], m) for m in _check_rephrasings(row, names["rephrasings"])),
        ]
        problems.extend(DataProblem(source, number, field, msg) for field, msg in found if msg is not None)
    return problems


def ensure_valid(
    rows: Sequence[Any],
    source: str,
    *,
    row_numbers: Sequence[int] | None = None,
    field_names: Mapping[str, str] | None = None,
) -> None:
    """Raise :class:`InvalidDataError` listing every problem that :func:`validate_rows` finds."""
    problems = validate_rows(rows, source, row_numbers=row_numbers, field_names=field_names)
    if problems:
        raise InvalidDataError(problems)
