"""One way to print a table: markdown for reports, rich for the console, from the same headers and rows."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table


def _cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A GitHub markdown table; ``|`` in a cell is escaped and newlines become spaces."""
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def print_table(console: Console, headers: Sequence[str], rows: Sequence[Sequence], title: str | None = None):
    table = Table(title=title)
    for h in headers:
        table.add_column(str(h))
    for row in rows:
        table.add_row(*(str(v) for v in row))
    console.print(table)
