"""The one JSON-lines reader and writer, and the one atomic file writer (tagrpo.data.jsonl)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tagrpo.common.errors import InputError
from tagrpo.data.jsonl import append_jsonl, atomic_write, read_jsonl, write_jsonl


def test_write_replaces_the_file_whole_and_append_extends_it(tmp_path):
    path = str(tmp_path / "sub" / "rows.jsonl")
    assert write_jsonl(path, [{"a": 1}, {"a": "é\u2028"}]) == path  # U+2028 stays inside its line
    write_jsonl(path, [{"a": 2}])
    append_jsonl(path, [{"a": 3}])
    assert read_jsonl(path) == [{"a": 2}, {"a": 3}]
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["rows.jsonl"]  # no temporary file left


def test_a_torn_last_line_is_dropped_and_a_bad_middle_line_named(tmp_path):
    path = tmp_path / "cache.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n{"a"')
    assert read_jsonl(str(path), repair=True) == [{"a": 1}, {"a": 2}]
    append_jsonl(str(path), [{"a": 3}])
    assert read_jsonl(str(path)) == [{"a": 1}, {"a": 2}, {"a": 3}]
    path.write_text('{"a": 1}\nnot json\n{"a": 2}\n')
    with pytest.raises(InputError, match="line 2: not valid JSON"):
        read_jsonl(str(path))


def test_atomic_write_renames_a_whole_file_into_place_or_leaves_the_old_one(tmp_path):
    path = str(tmp_path / "a" / "b" / "summary.json")
    assert atomic_write(path, lambda tmp: Path(tmp).write_text("new\n")) == path  # makes the directories
    assert Path(path).read_text() == "new\n"
    assert [p.name for p in (tmp_path / "a" / "b").iterdir()] == ["summary.json"]  # no temporary file left

    def torn(tmp: str) -> None:
        Path(tmp).write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(path, torn)
    assert Path(path).read_text() == "new\n"  # the file in place is the old one, whole
