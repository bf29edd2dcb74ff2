"""The crash-safe result cache: one JSONL of finished requests, keyed by what determines their result.

A rephrasing's key is ``[question id, transform type, variant, template hash, model, question hash]`` (the hash
of the question text, so a question edited under the same id is not served an old rephrasing); a solver check's
key adds ``"solve"``, the solver model and a hash of the rephrasing it answered. Results are appended as soon as they
arrive, by a writer task that appends whatever has accumulated since its last write as one durable
(``fsync``-ed) write, off the event loop: a ``kill -9`` loses at most the requests in flight and the ones not yet
written, and never corrupts the file, since :func:`~tagrpo.data.jsonl.read_jsonl` drops (and cuts) a torn last
line. A lock file stops two runs from writing the same cache at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from typing import Any

import filelock

from tagrpo.common.errors import InputError
from tagrpo.data.jsonl import append_jsonl, read_jsonl


def cache_key(*parts: Any) -> str:
    """The canonical string of a key (a compact JSON list; ids are strings)."""
    return json.dumps([str(p) for p in parts], ensure_ascii=False, separators=(",", ":"))


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class ResultCache:
    """Records by key (the last one wins), loaded from ``path`` and appended to it in batches."""

    def __init__(self, path: str) -> None:
        self.path = path
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._lock: filelock.FileLock | None = filelock.FileLock(path + ".lock", thread_local=False)  # to close()
        try:
            self._lock.acquire(timeout=0)
        except filelock.Timeout:
            raise InputError(f"{path}: another rephrase run is using this cache") from None
        self.records: dict[str, dict] = {}
        for record in read_jsonl(path, repair=True):
            if isinstance(record, dict) and "key" in record:
                self.records[record["key"]] = record
        self.loaded = len(self.records)
        self.written = 0
        self._pending: list[dict] = []
        self._wake: asyncio.Event | None = None
        self._writer: asyncio.Task | None = None
        self._stopping = False

    def __contains__(self, key: str) -> bool:
        return key in self.records

    def get(self, key: str) -> dict | None:
        return self.records.get(key)

    def add(self, record: dict) -> None:
        """Keep ``record`` and queue it for the writer (written at once when no writer runs)."""
        self.records[record["key"]] = record
        if self._writer is None:
            append_jsonl(self.path, [record])
            self.written += 1
            return
        self._pending.append(record)
        self._wake.set()

    async def _write_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._pending = self._pending, []
            if batch:
                await asyncio.to_thread(append_jsonl, self.path, batch)
                self.written += len(batch)
            if self._stopping and not self._pending:
                return

    def start(self) -> None:
        """Start the writer task (inside a running event loop)."""
        self._stopping = False
        self._wake = asyncio.Event()
        self._writer = asyncio.get_running_loop().create_task(self._write_loop())

    async def stop(self) -> None:
        """Let the writer write what is pending, then stop it."""
        if self._writer is None:
            return
        self._stopping = True
        self._wake.set()
        try:
            await self._writer
        finally:
            self._writer = None

    def close(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None
