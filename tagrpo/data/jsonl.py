"""The one JSON-lines reader and writer of the project, and its one atomic file writer.

``parse_jsonl`` splits a text at line feeds only (JSON strings may hold U+2028, which ``str.splitlines`` would
split on) and returns each non-blank line's number and object, and each bad line's number and error.
``jsonl_rows`` is the reader of data files (the data loaders and the benchmark registry): every bad line is a
problem of an ``InvalidDataError`` naming the file and line. ``read_jsonl`` and ``append_jsonl`` are the
crash-safe pair behind every cache and counts file: appends are flushed and synced, and a torn last line (a crash
mid-write) is dropped. ``atomic_write`` writes a whole file through a temporary file renamed into place, so a
crash leaves the old file or the new one, never half of it; ``write_jsonl`` writes JSON lines that way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from typing import Any

from tagrpo.common.errors import InputError
from tagrpo.data.schema import DataProblem, InvalidDataError


def parse_jsonl(text: str) -> tuple[list[tuple[int, Any]], list[tuple[int, json.JSONDecodeError]]]:
    """``(line number, object)`` for every non-blank line that parses, ``(line number, error)`` for the others."""
    rows, errors = [], []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            try:
                rows.append((number, json.loads(line)))
            except json.JSONDecodeError as err:
                errors.append((number, err))
    return rows, errors


def jsonl_rows(text: str, source: str) -> list[tuple[int, Any]]:
    """``(line number, object)`` for every non-blank line of the JSON-lines ``text`` of the data file ``source``.

    Any bad line raises an InvalidDataError listing each one as ``<source>, row <n>: invalid JSON at line <n>,
    column <c>: <message>``.
    """
    rows, errors = parse_jsonl(text)
    if errors:
        raise InvalidDataError(
            [DataProblem(source, n, "", f"invalid JSON at line {n}, column {e.colno}: {e.msg}") for n, e in errors]
        )
    return rows


def read_jsonl(path: str, repair: bool = False) -> list[dict]:
    """All complete records of ``path`` ([] when it does not exist).

    Only the last line may be torn: it is dropped (and, with ``repair``, cut from the file so that the next append
    starts on a clean line). A bad line elsewhere is corruption and raises an InputError naming the line.
    """
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8", errors="replace")
    rows, errors = parse_jsonl(text)
    last = max((n for n, line in enumerate(text.split("\n"), start=1) if line.strip()), default=0)
    for number, err in errors:
        if number != last:
            raise InputError(f"{path}, line {number}: not valid JSON ({err.msg})")
        if repair:
            offset = sum(len(line) + 1 for line in data.split(b"\n")[: number - 1])
            with open(path, "r+b") as f:
                f.truncate(offset)
    return [row for _, row in rows]


def atomic_write(path: str, write: Callable[[str], Any]) -> str:
    """``write(tmp)`` to a temporary path beside ``path``, then rename it onto ``path``; returns ``path``.

    Missing directories are made. A crash leaves the old file (and possibly the temporary one), never half a file.
    """
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    write(tmp)
    os.replace(tmp, path)
    return path


def write_jsonl(path: str, records: Iterable[dict]) -> str:
    """Write ``path`` anew with one JSON object per line, atomically; returns ``path``."""

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)

    return atomic_write(path, write)


def append_jsonl(path: str, records: Iterable[dict]) -> None:
    """Append records, one JSON object per line, and make them durable before returning."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    payload = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    with open(path, "a", encoding="utf-8") as f:
        f.write(payload)
        f.flush()
        os.fsync(f.fileno())
