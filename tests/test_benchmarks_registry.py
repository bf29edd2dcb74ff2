"""Benchmark registry: counts, ids, answers and repairs on the shared data; errors; the GPQA loader on a fake CSV."""

from __future__ import annotations

import csv
import functools
import json
import os
from pathlib import Path

import pytest
from conftest import needs_data

from tagrpo.data.benchmarks import BENCHMARK_NAMES, BENCHMARKS, LETTERS, default_data_dir, load_benchmark, load_gpqa
from tagrpo.rewards import is_correct

DATA_DIR = default_data_dir()

COUNTS = {"math_train": 7500, "math500": 500, "aime24": 30, "aime25": 30, "amc23": 40}
COUNTS.update(olympiadbench=675, minerva=272)


@functools.cache
def rows_of(name: str) -> tuple[dict, ...]:
    return tuple(load_benchmark(name, data_dir=DATA_DIR))


def by_id(name: str) -> dict[str, dict]:
    return {row["id"]: row for row in rows_of(name)}


def test_registry_lists_all_benchmarks():
    assert set(BENCHMARK_NAMES) == {*COUNTS, "gpqa_diamond"}
    assert BENCHMARKS["gpqa_diamond"].count == 198 and BENCHMARKS["gpqa_diamond"].reward == "choice"
    assert all(BENCHMARKS[name].count == count and BENCHMARKS[name].reward == "math" for name, count in COUNTS.items())


@needs_data
@pytest.mark.parametrize("name", list(COUNTS))
def test_counts_ids_and_fields(name):
    rows = rows_of(name)
    assert len(rows) == COUNTS[name]
    assert len({row["id"] for row in rows}) == len(rows)
    for row in rows:
        assert isinstance(row["id"], str) and row["question"].strip() and row["answer"].strip()
        assert isinstance(row["answer"], str)
        assert row["benchmark"] == name and row["reward"] == "math"


@needs_data
def test_limit():
    assert [row["id"] for row in load_benchmark("math500", data_dir=DATA_DIR, limit=3)] == [
        row["id"] for row in rows_of("math500")[:3]
    ]


@needs_data
def test_aime25_escape_damage_repaired():
    rows = by_id("aime25")
    assert "\\frac" in rows["18"]["question"] and "\x0c" not in rows["18"]["question"]
    assert "\\triangle" in rows["19"]["question"]
    assert not any("\x0c" in row["question"] or "\t" in row["question"] for row in rows.values())


@needs_data
def test_math_train_answers_and_metadata():
    rows = by_id("math_train")
    assert rows["train/algebra/24014.json"]["answer"] == "2"  # written "\boxed 2"
    assert rows["train/algebra/25040.json"]["answer"] == "9"
    assert rows["train/number_theory/7115.json"]["answer"] == "0"  # empty \boxed{} in the file, repaired
    assert rows["train/number_theory/7117.json"]["answer"] == "0"
    assert rows["train/geometry/377.json"]["level"] is None  # "Level ?"
    assert {row["level"] for row in rows.values()} == {1, 2, 3, 4, 5, None}
    assert by_id("math500")["test/precalculus/807.json"]["answer"] == "\\left( 3, \\frac{\\pi}{2} \\right)"


@needs_data
def test_olympiadbench_dollars_stripped():
    rows = by_id("olympiadbench")
    assert rows["1610"]["answer"] == "\\frac{1}{2 n+2}"  # "$\frac{1}{2 n+2}$" in the file
    assert not any("$" in row["answer"] for row in rows.values())
    assert is_correct("so \\boxed{\\frac{1}{2n+2}}", rows["1610"]["answer"])


@needs_data
def test_aime_and_amc_answers_compare_numerically():
    padded = [row for row in rows_of("aime24") if row["answer"] == "025"]
    assert len(padded) == 1 and is_correct(r"\boxed{25}", padded[0]["answer"])
    assert not is_correct(r"\boxed{26}", padded[0]["answer"])
    amc = by_id("amc23")["0"]
    assert amc["answer"] == "27"  # JSON float 27.0 in the file
    assert is_correct(r"\boxed{27}", amc["answer"]) and is_correct(r"\boxed{27}", "27.0")
    assert by_id("aime25")["0"]["answer"] == "70"


def test_unknown_name_lists_valid_names():
    with pytest.raises(ValueError) as info:
        load_benchmark("math5000")
    assert all(name in str(info.value) for name in BENCHMARK_NAMES)


def test_missing_file_mentions_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FileNotFoundError) as info:
        load_benchmark("aime24", data_dir=tmp_path)
    assert "--data-dir" in str(info.value) and str(tmp_path / "aime24" / "test.jsonl") in str(info.value)


def test_default_data_dir_honours_env(tmp_path, monkeypatch):
    monkeypatch.setenv("TAGRPO_DATA_DIR", str(tmp_path))
    assert default_data_dir() == str(tmp_path)
    (tmp_path / "aime25").mkdir()
    (tmp_path / "aime25" / "test.jsonl").write_text('{"problem": "1+1?", "answer": 2, "id": "0"}\n')
    with pytest.warns(UserWarning, match="expected 30"):
        assert load_benchmark("aime25") == [
            {"id": "0", "question": "1+1?", "answer": "2", "benchmark": "aime25", "reward": "math"}
        ]


@pytest.mark.parametrize(
    ("name", "path", "bad", "field"),
    [
        ("aime24", "aime24/test.jsonl", {"id": 2, "problem": "Q"}, "answer"),
        ("olympiadbench", "olympiadbench/test.jsonl", {"id": 2, "final_answer": ["1"]}, "question"),
        ("minerva", "minerva_math/test.jsonl", {"idx": 2, "problem": "Q", "solution": "no box"}, "solution"),
    ],
)
def test_malformed_row_names_file_row_and_field(tmp_path, name, path, bad, field):
    good = {"id": 1, "idx": 1, "problem": "Q", "question": "Q", "answer": "1", "final_answer": ["1"]}
    target = tmp_path / path
    target.parent.mkdir()
    target.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match=f"row 2: field '{field}'") as info:
        load_benchmark(name, data_dir=tmp_path)
    assert str(target) in str(info.value)


def test_duplicate_ids_raise(tmp_path):
    (tmp_path / "amc23").mkdir()
    (tmp_path / "amc23" / "test.jsonl").write_text('{"id": 1, "problem": "Q", "answer": 1.0}\n' * 2)
    with pytest.raises(ValueError, match="row 2: id '1' repeats row 1"):
        load_benchmark("amc23", data_dir=tmp_path)


GPQA_COLUMNS = ["Record ID", "Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2"]
GPQA_COLUMNS += ["Incorrect Answer 3", "Subdomain", "High-level domain"]


def fake_gpqa(path: Path, drop: str | None = None) -> Path:
    records = [
        [
            f"rec{i}",
            f"Question {i}?\nSecond line.",
            f"right {i}",
            f"wrong {i}a",
            f"wrong {i}b",
            f"wrong {i}c",
            "Genetics",
        ]
        + ["Biology"]
        for i in range(3)
    ]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(GPQA_COLUMNS)
        for record in records:
            if drop:
                record[GPQA_COLUMNS.index(drop)] = ""
            writer.writerow(record)
    return path


def test_gpqa_shuffle_is_deterministic_and_letter_is_correct(tmp_path):
    path = fake_gpqa(tmp_path / "gpqa_diamond.csv")
    rows = load_gpqa(path)
    assert rows == load_gpqa(path) and len(rows) == 3
    for i, row in enumerate(rows):
        assert row["id"] == f"rec{i}" and row["answer"] in LETTERS and row["reward"] == "choice"
        assert row["options"][LETTERS.index(row["answer"])] == f"right {i}"
        assert f"({row['answer']}) right {i}\n" in row["question"] and "\\boxed{}" in row["question"]
        assert row["question"].startswith(f"Question {i}?\nSecond line.\n\n(A) ")
        assert sorted(row["options"]) == sorted([f"right {i}", f"wrong {i}a", f"wrong {i}b", f"wrong {i}c"])
        assert row["subject"] == "Genetics" and row["domain"] == "Biology"
    orders = {tuple(opt[-1] for opt in row["options"]) for row in rows}
    assert len(orders) > 1, "every question got the same permutation"
    reseeded = [load_gpqa(path, seed=s) for s in range(1, 4)]
    assert any([r["options"] for r in other] != [r["options"] for r in rows] for other in reseeded)


def test_gpqa_jsonl_matches_csv(tmp_path):
    path = fake_gpqa(tmp_path / "gpqa_diamond.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        records = list(csv.DictReader(handle))
    jsonl = tmp_path / "gpqa.jsonl"
    jsonl.write_text("".join(json.dumps(record) + "\n" for record in records))
    assert load_gpqa(jsonl) == load_gpqa(path)


def test_gpqa_via_load_benchmark(tmp_path, monkeypatch):
    monkeypatch.delenv("TAGRPO_GPQA_PATH", raising=False)
    fake_gpqa(tmp_path / "gpqa_diamond.csv")
    with pytest.warns(UserWarning, match="expected 198"):
        rows = load_benchmark("gpqa_diamond", data_dir=tmp_path)
    assert rows == load_gpqa(tmp_path / "gpqa_diamond.csv")
    elsewhere = fake_gpqa(tmp_path / "mine.csv")
    monkeypatch.setenv("TAGRPO_GPQA_PATH", str(elsewhere))
    assert load_benchmark("gpqa_diamond", data_dir=tmp_path / "missing", limit=2) == rows[:2]


def test_gpqa_absent_explains(tmp_path, monkeypatch):
    monkeypatch.delenv("TAGRPO_GPQA_PATH", raising=False)
    with pytest.raises(FileNotFoundError, match="TAGRPO_GPQA_PATH") as info:
        load_benchmark("gpqa_diamond", data_dir=tmp_path)
    assert "--data-dir" in str(info.value) and "gated" in str(info.value)


def test_gpqa_malformed_row(tmp_path):
    path = fake_gpqa(tmp_path / "g.csv", drop="Incorrect Answer 2")
    with pytest.raises(ValueError, match="row 1: field 'Incorrect Answer 2'"):
        load_gpqa(path)


def _real_gpqa() -> str | None:
    candidates = [os.environ.get("TAGRPO_GPQA_PATH"), DATA_DIR and str(Path(DATA_DIR) / "gpqa_diamond.csv")]
    return next((c for c in candidates if c and Path(c).exists()), None)


@pytest.mark.skipif(_real_gpqa() is None, reason="GPQA-Diamond is gated and not stored; provide gpqa_diamond.csv")
def test_real_gpqa_diamond():
    rows = load_benchmark("gpqa_diamond", data_dir=DATA_DIR)
    assert len(rows) == 198 and len({row["id"] for row in rows}) == 198
    assert all(row["answer"] in LETTERS for row in rows)


def test_hub_fallback_when_online(tmp_path, monkeypatch):
    """No file and not offline: rows come from ``datasets.load_dataset`` (stubbed here; nothing is downloaded)."""
    import datasets

    calls = []

    def fake_load_dataset(hub_id, config=None, split=None):
        calls.append((hub_id, config, split))
        return [{"question": f"Q{len(calls)}", "answer": "4.5e33"}]

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    rows = load_benchmark("minerva", data_dir=tmp_path, split="test", limit=1)
    assert calls == [("math-ai/minervamath", None, "test")]
    assert rows == [{"id": "0", "question": "Q1", "answer": "4.5e33", "benchmark": "minerva", "reward": "math"}]
    with pytest.warns(UserWarning, match="expected 7500"):
        rows = load_benchmark("math_train", data_dir=tmp_path)
    assert [call[1] for call in calls[1:]] == list(BENCHMARKS["math_train"].hub_configs)
    assert [row["id"] for row in rows] == [str(i) for i in range(7)] and calls[-1][2] == "train"
