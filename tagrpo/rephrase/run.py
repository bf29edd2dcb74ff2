"""``tagrpo rephrase``: N checked, problem-equivalent rephrasings per question, resumable and budget-bounded.

:func:`run_rephrase` loads the questions, sends one request per (question, planned transformation) that the
cache does not hold yet, checks each reply (:mod:`tagrpo.rephrase.checks`, or the backend's own check:
:class:`~tagrpo.rephrase.backends.BackendSpec`), optionally asks a solver model to answer the accepted ones
(math-verify against the gold answer), and writes the data set ``tagrpo train`` reads: ``id``, ``prompt``,
``answer``, ``rephrasings`` (accepted, in type-plan order), ``rephrasing_provenance`` and the source row's
metadata. Next to ``out`` it writes ``.rejected.jsonl`` (every rejected rephrasing with its reason) and
``.summary.json`` (the counts it returns).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import logging
import time
from dataclasses import dataclass, replace
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeRemainingColumn
from rich.text import Text

from tagrpo.common.errors import TagrpoError
from tagrpo.rephrase.backends import BACKENDS, Budget, Completion, Request, TransformersBackend
from tagrpo.rephrase.cache import ResultCache, cache_key, text_hash
from tagrpo.rephrase.checks import bare_text, check_rephrasing, clean_response, renamable
from tagrpo.rephrase.config import CANONICAL, DO_SAMPLE_FLAG, RephraseConfig, load_source_rows, make_backend
from tagrpo.rephrase.report import print_summary, tally, write_json, write_rows
from tagrpo.rephrase.templates import (
    TRANSFORM_TYPES,
    build_messages,
    cut_at_stop,
    load_templates,
    plan_for,
    solver_messages,
    template_hash,
    type_plan,
)

logger = logging.getLogger(__name__)
__all__ = ["RephraseConfig", "load_source_rows", "run_rephrase"]


class InFlightColumn(ProgressColumn):
    """``3 in flight, oldest 41 s``: what a slow or stuck server looks like while it happens."""

    def __init__(self, backend) -> None:
        super().__init__()
        self.backend = backend

    def render(self, task) -> Text:
        started = list(getattr(self.backend, "in_flight", {}).values())
        if not started:
            return Text("")
        return Text(f"{len(started)} in flight, oldest {time.monotonic() - min(started):.0f} s", style="dim")


@dataclass
class Slot:
    """One planned rephrasing of one question."""

    row: dict
    transform: str
    variant: int
    thash: str
    qhash: str  # the question's text hash: a question edited under the same id is rephrased anew
    key: str
    attempt: int = 0  # how many requests for it were rejected before this one


class _Run:
    """The state of one run: slots, cache, budget, failures, progress."""

    def __init__(self, cfg: RephraseConfig, rows: list[dict], backend, console: Console) -> None:
        self.cfg, self.rows, self.backend, self.console = cfg, rows, backend, console
        self.spec = BACKENDS[cfg.backend]
        system, templates, self.stop = load_templates(cfg.templates_file)
        plan = type_plan(cfg.n, cfg.types)
        own_check = self.spec.check is not None  # the backend's exact check: the plan stays as it is
        plans = [plan if own_check else plan_for(plan, cfg.types, renamable(r["prompt"])) for r in rows]
        self.replaced = sum(p != plan for p in plans)  # questions with nothing to rename
        used = {t for p in [plan, *plans] for t, _ in p}
        self.types = [t for t in TRANSFORM_TYPES if t in used]
        self.hashes = {t: template_hash(system, templates[t], self.stop) for t in self.types}
        self.messages = lambda row, t: build_messages(system, templates[t], row["prompt"])
        self.slots: list[list[Slot]] = []
        for row, row_plan in zip(rows, plans, strict=True):
            qhash = text_hash(row["prompt"])
            self.slots.append([Slot(row, t, v, self.hashes[t], qhash, self.key(row, t, v, qhash)) for t, v in row_plan])
        self.cache = ResultCache(cfg.cache_path)
        price_in, price_out = cfg.prices or (0.0, 0.0)
        self.budget = Budget(cfg.max_requests, cfg.max_cost, price_in, price_out, priced=cfg.prices is not None)
        self.failures: dict[str, str] = {}
        same = cfg.solver == "same" or self.spec.self_solving
        self.solver_model: str | None = None if cfg.solver is None else backend.model if same else cfg.solver
        self.request_s = 0.0
        self.from_cache = sum(s.key in self.cache for row in self.slots for s in row)
        self.slot_of = {s.key: s for row in self.slots for s in row}
        self.rows_by_id = {str(r["id"]): r for r in rows}

    def key(self, row: dict, transform: str, variant: int, qhash: str, attempt: int = 0) -> str:
        """The cache key of one request (the first attempt's key has no attempt part: caches from before stay)."""
        more = (attempt,) if attempt else ()
        return cache_key(row["id"], transform, variant, self.hashes[transform], self.backend.model, qhash, *more)

    def ask_again(self) -> int:
        """Replace each planned rephrasing whose current reply is rejected, and that has attempts left, by its next
        attempt; returns how many were replaced."""
        again = 0
        for row in self.slots:
            for i, s in enumerate(row):
                if s.attempt + 1 < self.cfg.attempts and self.outcome(s)[0] == "rejected":
                    key = self.key(s.row, s.transform, s.variant, s.qhash, s.attempt + 1)
                    row[i] = self.slot_of[key] = replace(s, key=key, attempt=s.attempt + 1)
                    self.from_cache += key in self.cache
                    again += 1
        return again

    def repeated(self) -> int:
        """Later attempts whose reply is word for word the one before it: a server that does not sample (for
        ``transformers serve``, a model whose generation config lacks ``do_sample``) answers a new seed alike."""
        same = 0
        for row in self.slots:
            for s in row:
                raws = [(self.cache.get(self.key(s.row, s.transform, s.variant, s.qhash, a)) or {}).get("raw")
                        for a in range(s.attempt + 1)]
                same += sum(a is not None and a == b for a, b in itertools.pairwise(raws))
        return same

    def check(self, slot: Slot, text: str):
        if self.spec.check is not None:
            return self.spec.check(slot.row["prompt"], text)
        return check_rephrasing(
            slot.row["prompt"], text, slot.transform, self.cfg.min_length_ratio, self.cfg.max_length_ratio
        )

    def solve_key(self, slot: Slot, text: str) -> str:
        return cache_key(slot.key, "solve", self.solver_model, text_hash(text))

    def _record(self, request: Request, completion: Completion) -> dict:
        self.budget.record(completion)
        return {
            "key": request.key,
            "kind": request.kind,
            "id": request.row_id,
            "type": request.transform,
            "variant": request.variant,
            "model": self.backend.model,
            "backend": self.backend.kind,
            "usage": [completion.prompt_tokens, completion.completion_tokens],
        }

    async def execute(self, backend, requests: list[Request], label: str, emit_one) -> None:
        """Send ``requests`` through ``backend``; each result is checked and appended to the cache on arrival."""
        columns = (
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            InFlightColumn(backend),
        )
        per_row: dict[str, int] = {}
        for request in requests:
            per_row[request.row_id] = per_row.get(request.row_id, 0) + 1
        with Progress(*columns, console=self.console, transient=False) as progress:
            task = progress.add_task(label, total=len(self.rows), completed=len(self.rows) - len(per_row))

            def emit(request: Request, completion: Completion | None, error: str | None) -> None:
                if completion is not None:
                    self.cache.add(emit_one(request, completion))
                elif error != "budget":
                    self.failures[request.key] = error or "error"
                per_row[request.row_id] -= 1
                if per_row[request.row_id] == 0:
                    progress.advance(task)

            if requests:
                began = time.perf_counter()
                self.cache.start()
                try:
                    await backend.run(requests, emit, self.budget)
                finally:
                    await self.cache.stop()
                    self.request_s += time.perf_counter() - began

    def rephrase_requests(self, attempt: int = 0) -> list[Request]:
        return [
            Request(
                s.key,
                str(s.row["id"]),
                "rephrase",
                s.transform,
                s.variant,
                s.row["prompt"],
                self.messages(s.row, s.transform),
                self.stop,
                s.attempt,
            )
            for row in self.slots
            for s in row
            if s.attempt == attempt and s.key not in self.cache
        ]

    def emit_rephrase(self, request: Request, completion: Completion) -> dict:
        record = self._record(request, completion)
        text = clean_response(cut_at_stop(completion.text, self.stop))
        result = self.check(self.slot_of[request.key], text)
        record.update(
            template_hash=self.hashes[request.transform],
            raw=completion.text,
            text=text,
            accepted=result.accepted,
            reason=result.reason,
            detail=result.detail,
            checks_passed=result.passed,
        )
        return record

    def solve_requests(self) -> list[Request]:
        requests = []
        for row in self.slots:
            for s in row:
                record = self.cache.get(s.key)
                if record is None or not self.check(s, record["text"]).accepted:
                    continue
                key = self.solve_key(s, record["text"])
                if key not in self.cache:
                    requests.append(
                        Request(
                            key,
                            str(s.row["id"]),
                            "solve",
                            s.transform,
                            s.variant,
                            record["text"],
                            solver_messages(record["text"]),
                        )
                    )
        return requests

    def emit_solve(self, request: Request, completion: Completion) -> dict:
        from tagrpo.rewards import is_correct

        record = self._record(request, completion)
        gold = str(self.rows_by_id[request.row_id]["answer"])
        record.update(model=self.solver_model, response=completion.text, correct=is_correct(completion.text, gold))
        return record

    def outcome(self, slot: Slot) -> tuple[str, str | None, list[str], str]:
        """``(status, reason, checks passed, text)`` of a slot from the cache and this run's failures."""
        record = self.cache.get(slot.key)
        if record is None:
            failure = self.failures.get(slot.key)
            return ("failed", failure, [], "") if failure else ("pending", None, [], "")
        text = record["text"]
        result = self.check(slot, text)
        if not result.accepted:
            return "rejected", result.reason, result.passed, text
        if self.cfg.solver is None:
            return "accepted", None, result.passed, text
        solved = self.cache.get(self.solve_key(slot, text))
        if solved is None:
            failure = self.failures.get(self.solve_key(slot, text))
            return ("failed", failure, result.passed, text) if failure else ("pending", None, result.passed, text)
        if not solved["correct"]:
            return "rejected", "solver", result.passed, text
        return "accepted", None, [*result.passed, "solver"], text


def run_rephrase(cfg: RephraseConfig, console: Console | None = None) -> dict[str, Any]:
    """Rephrase, check and write; returns the summary counts (also written to ``OUT.summary.json``)."""
    start = time.perf_counter()
    console = console or Console(stderr=True)
    rows = load_source_rows(cfg)
    preflight = BACKENDS[cfg.backend].preflight
    if preflight is not None:
        preflight(rows, type_plan(cfg.n, cfg.types))
    backend = make_backend(cfg, cfg.model)
    run = _Run(cfg, rows, backend, console)
    try:
        asyncio.run(_phases(run, backend))
    finally:
        run.cache.close()
    return _finish(run, start)


async def _phases(run: _Run, backend) -> None:
    """Rephrase (then solve) every planned rephrasing; while attempts are left, ask again for each one rejected."""
    solver = None
    try:
        for attempt in range(run.cfg.attempts):
            label = "rephrasing" if attempt == 0 else f"rephrasing again ({attempt + 1} of {run.cfg.attempts})"
            await run.execute(backend, run.rephrase_requests(attempt), label, run.emit_rephrase)
            if run.solver_model is not None and run.budget.stopped is None:
                if solver is None and isinstance(backend, TransformersBackend) and run.solver_model == backend.model:
                    solver = copy.copy(backend)
                    solver.temperature, solver.max_tokens = 0.0, run.cfg.solver_max_tokens
                elif solver is None:
                    solver = make_backend(run.cfg, run.solver_model, solver=True)
                await run.execute(solver, run.solve_requests(), "solver check", run.emit_solve)
            if run.budget.stopped is not None or not run.ask_again():
                break
    finally:
        if solver is not None and solver is not backend:
            await solver.aclose()
        await backend.aclose()


class RephraseFailed(TagrpoError):
    """No question got a single rephrasing: nothing is written (the cache keeps whatever arrived)."""


SHORT_WARNING = 0.2  # warn when more than this share of questions has fewer than N rephrasings


def _nothing_accepted(run: _Run, rejected: dict[str, int]) -> str:
    """Why no question got a rephrasing: every request failed, or every reply was rejected (``rejected``: by reason)."""
    where = run.cfg.base_url or ("api.openai.com" if run.cfg.backend == "openai" else run.cfg.backend)
    errors = dict(run.budget.errors)
    if not run.cache.written and not run.from_cache and errors:
        cause = ", ".join(f"{k} x{v}" for k, v in sorted(errors.items()))
        return f"no request to {where} succeeded ({cause}); no output written"
    cause = ", ".join(f"{k} x{v}" for k, v in sorted(rejected.items())) or "no reply"
    return f"not one rephrasing from {where} ({run.backend.model}) was accepted ({cause}); no output written"


def _cache_cost(run: _Run) -> float:
    """The cost of every request in the cache (all runs so far) at this run's prices."""
    tokens_in = sum(r.get("usage", [0, 0])[0] for r in run.cache.records.values())
    tokens_out = sum(r.get("usage", [0, 0])[1] for r in run.cache.records.values())
    return (tokens_in * run.budget.price_in + tokens_out * run.budget.price_out) / 1e6


def _question(run: _Run, row: dict, slots: list[Slot], outcomes: list, rejected: list) -> dict:
    """The output row of one question: its accepted rephrasings (a repeat of an accepted one is rejected as
    ``duplicate``) with their provenance; its rejections go to ``rejected``, every outcome to ``outcomes``."""
    rephrasings, provenance, seen = [], [], {}
    for slot in slots:
        status, reason, passed, text = run.outcome(slot)
        detail = run.check(slot, text).detail if status == "rejected" else ""
        if status == "accepted" and bare_text(text) in seen:
            status, reason = "rejected", "duplicate"
            detail = f"same text as the accepted {seen[bare_text(text)]} rephrasing"
        elif status == "accepted":
            seen[bare_text(text)] = slot.transform
        outcomes.append((slot.transform, status, reason))
        if status == "accepted":
            rephrasings.append(text)
            provenance.append({"type": slot.transform, "model": run.backend.model, "template_hash": slot.thash,
                               "checks_passed": passed, "backend": run.backend.kind, "attempt": slot.attempt + 1,
                               **({"solver": run.solver_model} if run.solver_model else {})})
        elif status == "rejected":
            rejected.append({"id": row["id"], "type": slot.transform, "variant": slot.variant, "reason": reason,
                             "detail": detail, "text": text, "attempts": slot.attempt + 1})
    meta = {k: v for k, v in row.items() if k not in CANONICAL}
    return {"id": row["id"], "prompt": row["prompt"], "answer": row["answer"], "rephrasings": rephrasings,
            "rephrasing_provenance": provenance, **meta}


def _finish(run: _Run, start: float) -> dict[str, Any]:
    cfg, rejected, outcomes = run.cfg, [], []
    out_rows = [_question(run, row, slots, outcomes, rejected) for row, slots in zip(run.rows, run.slots, strict=True)]
    counts = tally(outcomes, run.types)
    if run.rows and not any(r["rephrasings"] for r in out_rows):
        raise RephraseFailed(_nothing_accepted(run, counts["rejected_by_reason"]))
    complete = sum(len(r["rephrasings"]) == cfg.n for r in out_rows)
    short = len(run.rows) - complete
    if short > SHORT_WARNING * len(run.rows):
        logger.warning("%d of %d questions (%.0f%%) have fewer than %d accepted rephrasings", short, len(run.rows),
                       100 * short / len(run.rows), cfg.n)
    write_rows(cfg.out, out_rows)
    write_rows(cfg.out + ".rejected.jsonl", rejected)
    summary = {
        "questions": len(run.rows),
        "n": cfg.n,
        "backend": run.backend.kind,
        "model": run.backend.model,
        **counts,
        "complete_questions": complete,
        "attempts": cfg.attempts,
        "extra_body": cfg.extra_fields() or None,
        "accepted_on_a_later_attempt": sum(p["attempt"] > 1 for r in out_rows for p in r["rephrasing_provenance"]),
        "same_reply_on_a_later_attempt": run.repeated(),
        "renaming_replaced": run.replaced,
        "short_questions": short,
        "from_cache": run.from_cache,
        "new_results": run.cache.written,
        **run.budget.counts(),
        "limit_ignored": getattr(run.backend, "limit_ignored", 0),
        "cache_cost_usd": round(_cache_cost(run), 6) if run.budget.priced else None,
        "template_hashes": run.hashes,
        "solver": run.solver_model,
        "out": cfg.out,
        "cache": cfg.cache_path,
        "request_phase_s": round(run.request_s, 3),
        "elapsed_s": round(time.perf_counter() - start, 3),
    }
    if summary["budget_stopped"]:
        logger.warning("budget: %s; %d rephrasings pending", summary["budget_stopped"], summary["pending"])
    if same := summary["same_reply_on_a_later_attempt"]:
        logger.warning("%d requests asked again with another seed got the same reply word for word: the server does "
                       "not sample (transformers serve samples only for a model whose generation_config.json sets "
                       "\"do_sample\": true, or with %s), so --attempts cannot help there", same,
                       DO_SAMPLE_FLAG)
    write_json(cfg.out + ".summary.json", summary)
    print_summary(summary, run.console)
    return summary

