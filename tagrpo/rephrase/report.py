"""Writing the rephrased data set (jsonl or parquet), the rejected rephrasings, and the summary table."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from tagrpo.common.errors import InputError
from tagrpo.data.jsonl import atomic_write, write_jsonl

OUT_SUFFIXES = (".jsonl", ".parquet")
STATUSES = ("accepted", "rejected", "failed", "pending")


def check_out_path(path: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in OUT_SUFFIXES:
        raise InputError(f"out={path!r}: the output must end in one of {', '.join(OUT_SUFFIXES)}")
    return path


def write_rows(path: str, rows: Sequence[dict[str, Any]]) -> None:
    """Rows as JSON lines or parquet (by extension), written to a temporary file and renamed into place."""
    if Path(path).suffix.lower() == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        keys = list(dict.fromkeys(k for row in rows for k in row))
        table = pa.Table.from_pylist([{k: row.get(k) for k in keys} for row in rows])
        atomic_write(path, lambda tmp: pq.write_table(table, tmp))
    else:
        write_jsonl(path, rows)


def write_json(path: str, data: Any) -> None:
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False)
            f.write("\n")

    atomic_write(path, write)


def tally(outcomes: Sequence[tuple[str, str, str | None]], types: Sequence[str]) -> dict[str, Any]:
    """Counts of ``(type, status, reason)`` outcomes: totals, per type, and rejections per reason."""
    by_type: dict[str, dict[str, Any]] = {
        t: {"accepted": 0, "rejected": {}, "failed": {}, "pending": 0} for t in dict.fromkeys(types)
    }
    totals: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    for transform, status, reason in outcomes:
        totals[status] += 1
        entry = by_type[transform]
        if status in ("rejected", "failed"):
            entry[status][reason] = entry[status].get(reason, 0) + 1
            if status == "rejected":
                rejected[reason] += 1
        else:
            entry[status] += 1
    out: dict[str, Any] = {s: totals[s] for s in STATUSES}
    out.update(by_type=by_type, rejected_by_reason=dict(rejected))
    return out


def summary_table(summary: dict[str, Any]) -> Table:
    """Accepted and rejected rephrasings by type and reason (plus failed and pending requests)."""
    reasons = sorted(summary["rejected_by_reason"])
    table = Table(title=f"rephrasings: {summary['backend']} {summary['model']}, N={summary['n']}")
    table.add_column("type")
    table.add_column("accepted", justify="right")
    for reason in reasons:
        table.add_column(f"rejected: {reason}", justify="right")
    table.add_column("failed", justify="right")
    table.add_column("pending", justify="right")
    rows = list(summary["by_type"].items())
    for name, entry in rows:
        cells = [str(entry["accepted"]), *(str(entry["rejected"].get(r, 0)) for r in reasons)]
        cells += [str(sum(entry["failed"].values())), str(entry["pending"])]
        table.add_row(name, *cells)
    total = [str(summary["accepted"]), *(str(summary["rejected_by_reason"][r]) for r in reasons)]
    table.add_row("all", *total, str(summary["failed"]), str(summary["pending"]), style="bold")
    return table


def print_summary(summary: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    console.print(summary_table(summary))
    n = summary["n"]
    console.print(
        f"questions: {summary['questions']} written to {summary['out']}; {summary['complete_questions']} with {n}"
        f" accepted rephrasings, {summary['short_questions']} with fewer (the trainer's short_rephrasings fills"
        " them)"
    )
    if summary.get("attempts", 1) > 1:
        console.print(
            f"up to {summary['attempts']} requests per planned rephrasing: {summary['accepted_on_a_later_attempt']}"
            " accepted after a rejected one; the rejections left are the last attempt's"
        )
    if summary.get("renaming_replaced"):
        console.print(
            f"{summary['renaming_replaced']} questions have no variable or name to rename: their renaming slot asked"
            " for another type instead"
        )
    if summary["cost_usd"] is None:
        cost = "cost not priced (no known price for this model and server; --price-in/--price-out set one)"
    else:
        cost = f"cost ${summary['cost_usd']:.4f} (all cached results: ${summary['cache_cost_usd']:.4f})"
    console.print(
        f"requests: {summary['requests']} ({summary['retries']} retries), tokens {summary['prompt_tokens']} in /"
        f" {summary['completion_tokens']} out, {cost}; {summary['from_cache']} results"
        f" reused from the cache, {summary['new_results']} new; {summary['elapsed_s']:.1f} s"
    )
    if summary["request_errors"]:
        console.print(f"request errors (retried or failed): {summary['request_errors']}")
    if summary["budget_stopped"]:
        console.print(
            f"[bold yellow]budget: {summary['budget_stopped']}; no new requests were issued after it,"
            f" {summary['pending']} rephrasings are pending (rerun with a larger budget to finish)[/]"
        )
