"""The train rows' rephrasings, checked before they reach a step: all at once for a ``datasets.Dataset``, row by row
as they arrive for a streaming ``datasets.IterableDataset``.

A map-style dataset is in memory (or memory-mapped), so its ``rephrasings`` column is read once when the trainer is
built and a short row stops the run before the model loads. A stream is never read ahead: its ``column_names`` may
be None (``IterableDataset.from_generator``) and reading it whole would defeat streaming, so each row is checked by a
lazy ``IterableDataset.map`` as TRL's data loader pulls it, and a short row stops training with one line naming its
position in the stream and its id. Fixing short rows is ``tagrpo.data.fit_rephrasings`` (a list of rows) or the same
rule in a ``.map`` of the stream.
"""

from __future__ import annotations

from datasets import IterableDataset

from tagrpo.common.errors import InputError


def checked_rephrasings(dataset, num_rephrasings: int):
    """``dataset`` as the trainer should hold it: checked now (``Dataset``), or wrapped so that each row is checked
    when it is read (``IterableDataset``). Raises ``InputError`` on the first row with fewer than ``num_rephrasings``
    rephrasings."""
    if dataset is None or num_rephrasings == 0:
        return dataset
    if isinstance(dataset, IterableDataset):
        return dataset.map(_RowCheck(num_rephrasings, "train stream"), with_indices=True)
    if "rephrasings" not in dataset.column_names:
        raise InputError(f"num_rephrasings={num_rephrasings} but the train dataset has no 'rephrasings' column")
    short = _RowCheck(num_rephrasings, "train dataset")
    for index, rephrasings in enumerate(dataset["rephrasings"]):
        if _count(rephrasings) < num_rephrasings:
            short({"id": dataset[index].get("id"), "rephrasings": rephrasings}, index)
    return dataset


class _RowCheck:
    """The per-row check (a class, so that ``datasets`` can fingerprint it)."""

    def __init__(self, num_rephrasings: int, source: str):
        self.num_rephrasings, self.source = num_rephrasings, source

    def __call__(self, row: dict, index: int) -> dict:
        have = _count(row.get("rephrasings"))
        if have >= self.num_rephrasings:
            return row
        name = f"{self.source} row {index + 1}" + (f" (id {row['id']!r})" if row.get("id") is not None else "")
        if "rephrasings" not in row:
            raise InputError(f"{name}: no field 'rephrasings', num_rephrasings={self.num_rephrasings}")
        raise InputError(
            f"{name}: field 'rephrasings' has {have} entries, num_rephrasings={self.num_rephrasings} "
            "(apply tagrpo.data.fit_rephrasings first)"
        )


def _count(rephrasings) -> int:
    return 0 if rephrasings is None else len(rephrasings)
