"""What to do with a question that has fewer (or more) rephrasings than the ``N`` a run asks for.

TA-GRPO samples ``G`` responses for each of the ``N+1`` variants of a question (``q0`` plus ``N``
rephrasings) and pools them, so every pool should hold ``(N+1)*G`` responses. :func:`fit_rephrasings` gives
every row exactly ``N`` rephrasings:

- a row with more than ``N`` keeps its first ``N`` (counted as ``complete`` and ``truncated``);
- a row with exactly ``N`` is left as it is (``complete``);
- a row with fewer than ``N`` follows the rule ``short`` (the trainer's ``short_rephrasings``):

  - ``"fill_original"`` (default): pad the missing slots with the original prompt ``q0`` (``filled``);
  - ``"cycle"``: repeat the available rephrasings in order (``[a, b]`` -> ``[a, b, a, b, a]`` for ``N=5``);
    with none available, fall back to ``q0`` (``filled``);
  - ``"drop"``: remove the row (``dropped``).

``fill_original`` is the default because a filled slot only adds ``G`` more samples of ``q0``: the pool keeps
its fixed size (so batches keep one shape), no rephrasing is over-weighted as ``cycle`` would, and no question
is lost as with ``drop``. The pool is then a little closer to plain GRPO on ``q0``, which the returned counts
make visible in the logs. With ``N=0`` every row gets ``[]`` and counts as ``complete`` (and ``truncated``
if it had rephrasings).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import cycle, islice
from typing import Any

from tagrpo.common.errors import InputError
from tagrpo.common.modes import check_mode

SHORT_RULES = ("fill_original", "cycle", "drop")


def _pad(available: list[str], prompt: str, missing: int, short: str) -> list[str]:
    if short == "cycle" and available:
        return list(islice(cycle(available), missing))
    return [prompt] * missing


def fit_rephrasings(
    rows: Sequence[Mapping[str, Any]], num_rephrasings: int, short: str = "fill_original"
) -> tuple[list[dict], dict[str, int]]:
    """Return copies of ``rows`` with exactly ``num_rephrasings`` rephrasings each, and counts per outcome.

    The counts are ``{"complete", "filled", "dropped", "truncated"}``: ``complete`` rows had at least
    ``num_rephrasings`` (``truncated`` ones had more and kept the first ``num_rephrasings``); ``filled`` rows
    had fewer and were padded; ``dropped`` rows had fewer and were removed (``short="drop"``). The input is
    not modified. Raises ValueError for an unknown ``short`` or a negative ``num_rephrasings``.
    """
    check_mode("short_rephrasings", short, SHORT_RULES)
    if isinstance(num_rephrasings, bool) or not isinstance(num_rephrasings, int):
        raise TypeError(f"num_rephrasings must be an int, got {type(num_rephrasings).__name__}")
    if num_rephrasings < 0:
        raise InputError(f"num_rephrasings must be >= 0, got {num_rephrasings}")
    counts = {"complete": 0, "filled": 0, "dropped": 0, "truncated": 0}
    fitted: list[dict] = []
    for row in rows:
        available = list(row.get("rephrasings") or [])
        missing = num_rephrasings - len(available)
        if missing <= 0:
            counts["complete"] += 1
            counts["truncated"] += int(missing < 0)
            rephrasings = available[:num_rephrasings]
        elif short == "drop":
            counts["dropped"] += 1
            continue
        else:
            counts["filled"] += 1
            rephrasings = available + _pad(available, row["prompt"], missing, short)
        fitted.append({**row, "rephrasings": rephrasings})
    return fitted, counts
