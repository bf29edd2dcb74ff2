"""Load rephrased-question rows from files, ``datasets`` objects, saved directories or the Hugging Face hub.

:func:`load_rows` returns raw rows; :func:`load_questions` renames the user's columns onto the canonical
schema (see :mod:`tagrpo.data.schema`), validates every row and raises :class:`InvalidDataError` listing all
problems, each naming the source, the row (for JSONL, the line number, blank lines included) and the field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tagrpo.common.errors import InputError
from tagrpo.common.modes import check_mode
from tagrpo.data.jsonl import jsonl_rows
from tagrpo.data.schema import DataProblem, InvalidDataError, ensure_valid

FILE_SUFFIXES = (".jsonl", ".json", ".parquet")
_SAVED_MARKERS = ("state.json", "dataset_info.json", "dataset_dict.json")  # datasets.config's names of save_to_disk


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` or ``HF_DATASETS_OFFLINE`` is 1, true, yes or on (any case, spaces ignored): then
    nothing is asked of the hub (the data loaders here and ``tagrpo.data.benchmarks``)."""
    flags = (os.environ.get(v, "").strip().upper() for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))
    return any(f in ("1", "ON", "YES", "TRUE") for f in flags)


def _json_list(text: str) -> list[Any] | None:
    """The list a whole ``.json`` text holds, or None (then it is read as JSON lines)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, list) else None


def _read_file(path: Path) -> tuple[list[Any], list[int]]:
    """Rows of a data file and the number reported for each: its line in JSON lines, else its 1-based position."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        rows = pq.read_table(path).to_pylist()
    else:
        text = path.read_text(encoding="utf-8")
        rows = _json_list(text) if suffix == ".json" else None
        if rows is None:
            numbered = jsonl_rows(text, str(path))
            return [row for _, row in numbered], [n for n, _ in numbered]
    return rows, list(range(1, len(rows) + 1))


def _dataset_rows(data: Any, split: str, name: str) -> tuple[list[Any], str]:
    import datasets  # imported here: the CLI's startup stays light

    if isinstance(data, datasets.DatasetDict):
        check_mode("split", split, list(data.keys()))
        return data[split].to_list(), f"{name}[{split}]"
    if isinstance(data, datasets.Dataset):
        return data.to_list(), name
    raise TypeError(f"{name}: expected a datasets.Dataset or DatasetDict, got {type(data).__name__}")


def _from_hub(source: str, split: str):
    """A hub data set, asked only for an ``owner/name`` id and only when the hub may be reached."""
    import datasets  # imported here: the CLI's startup stays light

    if "/" not in source or source.count("/") > 1 or source.startswith((".", "~")):
        raise InputError(f"data {source!r}: no such file or directory (and not a hub data set id owner/name)")
    if hub_offline():
        raise InputError(f"data {source!r}: not a local file or directory, and the hub is off (HF_HUB_OFFLINE=1)")
    try:
        return datasets.load_dataset(source, split=split)
    except (ConnectionError, OSError, FileNotFoundError, datasets.exceptions.DatasetNotFoundError) as err:
        raise InputError(f"data {source!r}: not a local file, and the hub could not provide it ({err})") from None


def _load(source: Any, split: str) -> tuple[list[Any], str, list[int]]:
    """Rows, display name and the number reported for each row (JSONL line or 1-based position)."""
    import datasets  # imported here: the CLI's startup stays light

    if isinstance(source, (datasets.Dataset, datasets.DatasetDict)):
        rows, name = _dataset_rows(source, split, type(source).__name__)
    elif isinstance(source, list):
        rows, name = list(source), "<rows>"
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_file():
            if path.suffix.lower() not in FILE_SUFFIXES:
                expected = ", ".join(FILE_SUFFIXES)
                raise InputError(f"{path}: unsupported file type {path.suffix!r}; expected: {expected}")
            rows, numbers = _read_file(path)
            if not rows:
                raise InputError(f"{path}: the file is empty (no rows)")
            return rows, str(path), numbers
        if path.is_dir():
            if any((path / marker).exists() for marker in _SAVED_MARKERS):
                rows, name = _dataset_rows(datasets.load_from_disk(str(path)), split, str(path))
            else:
                rows, name = _dataset_rows(datasets.load_dataset(str(path), split=split), split, str(path))
        elif path.suffix.lower() in FILE_SUFFIXES or not isinstance(source, str):
            raise FileNotFoundError(f"data file not found: {path}")
        else:
            rows, name = _dataset_rows(_from_hub(source, split), split, f"{source}[{split}]")
    else:
        raise TypeError(
            "source must be a file path, a directory, a hub id, a list of rows, or a datasets.Dataset or"
            f" DatasetDict; got {type(source).__name__}"
        )
    return rows, name, list(range(1, len(rows) + 1))


def load_rows(source: Any, split: str = "train") -> tuple[list[dict], str]:
    """Load raw rows from ``source`` and return ``(rows, display_name)``; rows are not renamed or checked.

    ``source`` may be a ``.jsonl``, ``.json`` (a JSON list, or JSON lines) or ``.parquet`` file; a directory
    written by ``Dataset.save_to_disk`` (any other directory goes to ``datasets.load_dataset``); a
    ``datasets.Dataset`` or ``DatasetDict`` (``split`` is taken); a list of row dicts; or else a hub id
    passed to ``datasets.load_dataset(source, split=split)``. A JSONL line that is not valid JSON raises
    :class:`InvalidDataError` naming the file and line; blank lines are skipped. A missing path with a
    data-file suffix (or a missing ``Path``) raises FileNotFoundError.
    """
    rows, name, _ = _load(source, split)
    return rows, name


def _rename(row: Any, mapping: Mapping[str, str]) -> tuple[Any, list[str]]:
    """Copy ``row`` with source fields renamed to canonical ones; also return the displaced canonical keys."""
    if not isinstance(row, Mapping):
        return row, []
    sources = set(mapping.values())
    clashes = [c for c, s in mapping.items() if c != s and c in row and c not in sources]
    out = {canonical: row[field] for canonical, field in mapping.items() if field in row}
    out.update((k, v) for k, v in row.items() if k not in sources and k not in out)
    if mapping["rephrasings"] not in row:
        out["rephrasings"] = []
    return out, clashes


def load_questions(
    source: Any,
    *,
    split: str = "train",
    id_field: str = "id",
    prompt_field: str = "prompt",
    answer_field: str = "answer",
    rephrasings_field: str = "rephrasings",
) -> list[dict]:
    """Load, rename onto the canonical schema, validate, and return the rows.

    The ``*_field`` arguments name the source columns holding each canonical field; other keys are kept. A
    row without the rephrasings field gets ``[]``. A column already under a canonical name that another
    column is mapped onto (say ``prompt`` while ``prompt_field="problem"``) is reported rather than silently
    overwritten. Raises :class:`InvalidDataError` listing every problem found.
    """
    mapping = {
        "id": id_field,
        "prompt": prompt_field,
        "answer": answer_field,
        "rephrasings": rephrasings_field,
    }
    if len(set(mapping.values())) != len(mapping):
        raise InputError(f"each canonical field needs its own source field; got {mapping}")
    raw, name, numbers = _load(source, split)
    rows: list[Any] = []
    clash_problems: list[DataProblem] = []
    for number, raw_row in zip(numbers, raw, strict=True):
        row, clashes = _rename(raw_row, mapping)
        rows.append(row)
        clash_problems.extend(
            DataProblem(name, number, c, f"clashes with {c}_field={mapping[c]!r}; rename or drop this column")
            for c in clashes
        )
    try:
        ensure_valid(rows, name, row_numbers=numbers, field_names=mapping)
    except InvalidDataError as err:
        problems = sorted([*clash_problems, *err.problems], key=lambda p: p.row)
        raise InvalidDataError(problems) from None
    if clash_problems:
        raise InvalidDataError(clash_problems)
    return rows
