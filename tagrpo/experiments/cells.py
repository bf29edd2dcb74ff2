"""The studies' cell runner: every cell (one arm or base model, one seed, one setting) is a process-pool task that
writes its result to a directory of its own; a finished cell is reused, so an interrupted study resumes.

A cell is ``(spec, path)``: ``spec`` a JSON-able dict naming everything the result depends on, ``path`` its
``result.jsonl``. A result is reused only when the spec stored with it equals the one asked for.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from datetime import datetime, timezone
from multiprocessing import get_context

from tagrpo.common.machine import machine
from tagrpo.data.jsonl import read_jsonl, write_jsonl

Compute = Callable[[dict, str], dict]  # (spec, cell directory) -> result


def quiet_worker(threads: int = 1) -> None:
    """A pool worker's start: ``threads`` torch threads, and an exit when the study's process is gone."""
    import torch

    torch.set_num_threads(threads)
    threading.Thread(target=exit_with_parent, args=(os.getppid(),), daemon=True).start()


def exit_with_parent(parent: int, poll_s: float = 2.0) -> None:
    """End this worker when the study's process is gone (killed, or a test's timeout): no orphan keeps a cell
    running on the cores after it (the cell is not written, so a rerun computes it)."""
    while os.getppid() == parent:
        time.sleep(poll_s)
    os._exit(1)


def done(path: str, spec: dict) -> dict | None:
    """The stored result at ``path`` if it was computed for ``spec``, else None."""
    rows = read_jsonl(path)
    return rows[0] if rows and rows[0]["spec"] == spec else None


def run_cell(spec: dict, path: str, compute: Compute) -> dict:
    """One cell in this process by ``compute(spec, directory)``; its output goes to ``log.txt`` beside the result."""
    if (result := done(path, spec)) is not None:
        return result
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(os.path.join(os.path.dirname(path), "log.txt"), "w", encoding="utf-8") as log, \
            contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        result = compute(spec, os.path.dirname(path))
    write_jsonl(path, [result])
    return result


def finished(specs: list[tuple[dict, str]]) -> dict[str, dict]:
    """The results of the cells of ``specs`` already on disk, keyed by path."""
    return {path: r for spec, path in specs if (r := done(path, spec)) is not None}


def run_all(specs: list[tuple[dict, str]], workers: int, what: str, compute: Compute,
            threads: int = 1, on_cell: Callable[[str, dict], None] | None = None) -> dict[str, dict]:
    """Every cell of ``specs`` (reusing finished ones), ``workers`` processes of ``threads`` torch threads at a
    time, each cell by ``compute`` (see ``run_cell``; a module-level function, so spawned workers can import it);
    results keyed by path. ``on_cell(path, result)`` is called as each computed cell lands."""
    results = finished(specs)
    todo = [(spec, path) for spec, path in specs if path not in results]
    print(f"{what}: {len(specs)} cells, {len(results)} done before, {len(todo)} to run on {workers} workers",
          flush=True)
    start = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=quiet_worker,
                             initargs=(threads,)) as pool:
        futures = {pool.submit(run_cell, spec, path, compute): path for spec, path in todo}
        for i, future in enumerate(as_completed(futures), start=1):
            path = futures[future]
            results[path] = future.result()
            if on_cell is not None:
                on_cell(path, results[path])
            elapsed = time.perf_counter() - start
            print(f"  [{i}/{len(todo)}] {os.path.relpath(path)} ({results[path]['cell_wall_s']:.0f} s; "
                  f"{elapsed / 60:.1f} min, about {elapsed / i * (len(todo) - i) / 60:.0f} min left)", flush=True)
    return results


class Invocation:
    """One invocation of a study, as its line in the study's ``invocations.jsonl``: when it started, its arguments,
    workers and machine, its wall time, and the cells it computed with their own seconds. The line is rewritten as
    each cell lands (``landed``, a ``run_all`` callback), so an invocation killed mid-study keeps what it cost up to
    its last finished cell with ``finished`` false; ``finish`` marks it whole. With ``record`` false (a study only
    rendering its files) nothing is written."""

    def __init__(self, path: str, argv: list[str], workers: int, record: bool = True) -> None:
        self.path, self.record, self.start = path, record, time.perf_counter()
        self.line = {"started": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), "argv": argv,
                     "workers": workers, "wall_s": 0.0, "cells_run": 0, "cell_s": 0.0, "finished": False,
                     "machine": machine()}

    def landed(self, path: str, result: dict) -> None:
        self.line.update(cells_run=self.line["cells_run"] + 1, cell_s=self.line["cell_s"] + result["cell_wall_s"])
        self._save()

    def finish(self, ended: str | None = None) -> None:
        """Mark the invocation whole; ``ended``: why it stopped before the study's end (a failed premise)."""
        if ended is not None:
            self.line["ended"] = ended
        self._save(done=True)

    def _save(self, done: bool = False) -> None:
        if self.record:
            self.line.update(wall_s=time.perf_counter() - self.start, finished=done)
            checkpoint_invocation(self.path, self.line)


def checkpoint_invocation(path: str, record: dict) -> None:
    """Write an invocation's line (``record``, keyed by its ``started`` time) into ``path``, replacing its earlier
    line: called as each cell lands, so an invocation killed mid-study keeps its wall and cell time up to its last
    finished cell (with ``finished`` false), and the file is never left half-written (``write_jsonl``)."""
    rows = [r for r in read_jsonl(path) if r.get("started") != record["started"]]
    write_jsonl(path, [*rows, record])
