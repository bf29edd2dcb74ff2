"""Crash-safe JSON lines: appends are flushed and synced; a torn last line (a crash mid-write) is dropped."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

from tagrpo.errors import InputError


def read_jsonl(path: str, repair: bool = False) -> list[dict]:
    """All complete records of ``path`` ([] when it does not exist).

    Only the last line may be torn: it is dropped (and, with ``repair``, cut from the file so that the next append
    starts on a clean line). A bad line elsewhere is corruption and raises ValueError naming the line.
    """
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        data = f.read()
    records, offset = [], 0
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        last = number == len(lines)
        if raw.strip():
            try:
                records.append(json.loads(raw))
            except json.JSONDecodeError as err:
                if not (last or (number == len(lines) - 1 and not lines[-1])):
                    raise InputError(f"{path}, line {number}: not valid JSON ({err.msg})") from None
                if repair:
                    with open(path, "r+b") as f:
                        f.truncate(offset)
                break
        offset += len(raw) + 1
    return records


def append_jsonl(path: str, records: Iterable[dict]) -> None:
    """Append records, one JSON object per line, and make them durable before returning."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    payload = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    with open(path, "a", encoding="utf-8") as f:
        f.write(payload)
        f.flush()
        os.fsync(f.fileno())
