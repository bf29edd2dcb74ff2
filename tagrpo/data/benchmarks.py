"""Registry and loaders of the evaluation benchmarks (and the MATH training set) as ``{id, question, answer}`` rows.

Files are read from a data directory (``--data-dir``, else ``$TAGRPO_DATA_DIR``, else ``../shared/data`` next to
the repository root); see ``shared/data/README.md`` for where each file comes from. When a file is absent and
``HF_HUB_OFFLINE`` is not set, :func:`load_benchmark` falls back to the Hugging Face hub id of the registry.

Gold answers are strings: the ``answer`` field where there is one (AIME keeps zero padding such as ``"025"``;
AMC's JSON floats such as ``27.0`` become ``"27"``, though math-verify also accepts ``"27.0"``), else the last
``\\boxed{}`` of ``solution`` (MATH train, Minerva), else OlympiadBench's ``final_answer[0]`` with every ``$``
removed (``"$69$,$84$"`` becomes ``"69,84"``). GPQA-Diamond is gated and never stored: see :func:`load_gpqa`.
"""

from __future__ import annotations

import csv
import os
import random
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tagrpo.common.errors import InputError
from tagrpo.common.modes import check_mode
from tagrpo.common.registry import Registry
from tagrpo.data.answers import extract_boxed
from tagrpo.data.jsonl import jsonl_rows
from tagrpo.data.loaders import hub_offline as _offline

GPQA_ENV = "TAGRPO_GPQA_PATH"
DATA_ENV = "TAGRPO_DATA_DIR"
LETTERS = "ABCD"
GPQA_INSTRUCTION = "Answer with the letter of the correct option (A, B, C or D) inside \\boxed{}."


@dataclass(frozen=True)
class BenchmarkSpec:
    """Where a benchmark lives and how its rows map onto ``id``, ``question`` and ``answer``.

    ``answer_from`` is ``"answer"`` (that field), ``"boxed"`` (last ``\\boxed{}`` of ``solution``) or
    ``"final_answer"`` (OlympiadBench). ``meta`` maps output keys to the first source field present.
    """

    name: str
    path: str
    hub_id: str
    count: int
    reward: str
    answer_from: str
    question_field: str = "problem"
    id_field: str | None = None
    hub_configs: tuple[str | None, ...] = (None,)
    hub_split: str = "test"
    meta: dict[str, tuple[str, ...]] = field(default_factory=dict)


_SUBJECT = {"subject": ("subject", "type", "subfield")}
MATH_SUBJECTS = ("algebra", "counting_and_probability", "geometry", "intermediate_algebra", "number_theory")
MATH_SUBJECTS += ("prealgebra", "precalculus")
# Hub ids are the well-known public copies; they are UNVERIFIED here (no network): field names may differ, so
# rows from the hub also accept ``problem``/``question`` and ``answer``/``final_answer``/``solution``.
_SPECS = (
    BenchmarkSpec("math_train", "math_train/train.jsonl", "EleutherAI/hendrycks_math", 7500, "math", "boxed",
                  id_field="unique_id", hub_configs=MATH_SUBJECTS, hub_split="train",
                  meta={"level": ("level",), **_SUBJECT}),
    BenchmarkSpec("math500", "math500/test.jsonl", "HuggingFaceH4/MATH-500", 500, "math", "answer",
                  id_field="unique_id", meta={"level": ("level",), **_SUBJECT}),
    BenchmarkSpec("aime24", "aime24/test.jsonl", "HuggingFaceH4/aime_2024", 30, "math", "answer",
                  id_field="id", hub_split="train", meta={"url": ("url",)}),
    BenchmarkSpec("aime25", "aime25/test.jsonl", "yentinglin/aime_2025", 30, "math", "answer",
                  id_field="id", hub_split="train"),
    BenchmarkSpec("amc23", "amc23/test.jsonl", "math-ai/amc23", 40, "math", "answer",
                  id_field="id", meta={"url": ("url",)}),
    BenchmarkSpec("olympiadbench", "olympiadbench/test.jsonl", "Hothan/OlympiadBench", 675, "math", "final_answer",
                  question_field="question", id_field="id", hub_configs=("OE_TO_maths_en_COMP",), hub_split="train",
                  meta={**_SUBJECT, "answer_type": ("answer_type",), "unit": ("unit",)}),
    BenchmarkSpec("minerva", "minerva_math/test.jsonl", "math-ai/minervamath", 272, "math", "boxed",
                  id_field="idx", meta=_SUBJECT),
    BenchmarkSpec("gpqa_diamond", "gpqa_diamond.csv", "Idavidrein/gpqa", 198, "choice", "answer",
                  id_field="Record ID", hub_configs=("gpqa_diamond",), hub_split="train"),
)  # fmt: skip
BENCHMARKS: dict[str, BenchmarkSpec] = {spec.name: spec for spec in _SPECS}
BENCHMARK_NAMES = tuple(BENCHMARKS)
# Benchmarks built into the package rather than read from files: name -> loader(limit=...) -> rows, filled by
# register_benchmark (the toy world's: a plug-in, imported on the registry's first use, see tagrpo.common.registry).
BUILTINS: Registry[Callable[..., list[dict]]] = Registry()


def register_benchmark(name: str, loader: Callable[..., list[dict]]) -> None:
    """Make ``load_benchmark(name, limit=...)`` return ``loader(limit=limit)``: rows ``{id, question, answer,
    benchmark, reward}``; a second registration replaces the first."""
    BUILTINS[name] = loader


def benchmark_names() -> tuple[str, ...]:
    """The names :func:`load_benchmark` knows: the file-backed benchmarks, then the registered ones."""
    return (*BENCHMARK_NAMES, *BUILTINS)


# Two MATH-train solutions end in an empty ``$\boxed{}$``; both show the count is 0 (choice (A) 0).
_ANSWER_REPAIRS = {
    ("math_train", "train/number_theory/7115.json"): "0",
    ("math_train", "train/number_theory/7117.json"): "0",
}


def default_data_dir() -> str | None:
    """``$TAGRPO_DATA_DIR`` if set, else ``<repo root>/../shared/data`` if that exists, else None."""
    env = os.environ.get(DATA_ENV)
    if env:
        return env
    shared = Path(__file__).resolve().parents[2].parent / "shared" / "data"
    return str(shared) if shared.is_dir() else None


def _bad(source: str, row: int, name: str, what: str) -> ValueError:
    return ValueError(f"{source}: row {row}: field {name!r} {what}")


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _answer_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return _text(value)


def _strip_dollars(answer: str) -> str:
    """OlympiadBench answers: drop the ``$`` math delimiters (and a period after the last one)."""
    answer = answer.strip()
    if answer.endswith("$."):
        answer = answer[:-1]
    return answer.replace("$", "").strip()


def _level(value: Any) -> Any:
    match = re.fullmatch(r"(?:Level )?(\d+)", str(value).strip())
    return int(match.group(1)) if match else None


def _map_row(spec: BenchmarkSpec, row: dict, index: int, source: str) -> dict:
    """One source row as ``{id, question, answer, benchmark, reward, ...}``; ``index`` is 0-based."""
    number = index + 1
    if not isinstance(row, dict):
        raise InputError(f"{source}: row {number} is not a JSON object")
    q_name = next((f for f in (spec.question_field, "problem", "question") if row.get(f) is not None), None)
    question = _text(row.get(q_name)) if q_name else ""
    if not question:
        raise _bad(source, number, spec.question_field, "is missing or empty")
    if spec.name == "aime25":  # JSON-escape damage in this copy: "\f" of "\frac" and "\t" of "\triangle"
        question = question.replace("\x0c", "\\f").replace("\t", "\\t")
    order = {"answer": ("answer", "final_answer", "solution"), "boxed": ("solution", "answer", "final_answer")}
    candidates = order.get(spec.answer_from, ("final_answer", "answer", "solution"))
    a_name = next((f for f in candidates if row.get(f) not in (None, "", [])), candidates[0])
    value = row.get(a_name)
    raw_id = row.get(spec.id_field) if spec.id_field else None
    row_id = _text(raw_id) or str(index)
    if a_name == "solution":
        answer = extract_boxed(_text(value)) or _ANSWER_REPAIRS.get((spec.name, row_id), "")
        if not answer:
            raise _bad(source, number, a_name, "has no \\boxed{} answer")
    elif a_name == "final_answer":
        answer = _strip_dollars(_text(value[0] if isinstance(value, list) and value else value))
    else:
        answer = _answer_text(value)
    if not answer:
        raise _bad(source, number, a_name, "is missing or empty")
    out = {"id": row_id, "question": question, "answer": answer}
    out.update(benchmark=spec.name, reward=spec.reward)
    for key, names in spec.meta.items():
        value = next((row[f] for f in names if row.get(f) is not None), None)
        if value is not None:
            out[key] = _level(value) if key == "level" else value
    return out


def _finish(spec: BenchmarkSpec, rows: list[dict], source: str, limit: int | None) -> list[dict]:
    seen: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        if row["id"] in seen:
            raise InputError(f"{source}: row {number}: id {row['id']!r} repeats row {seen[row['id']]}")
        seen[row["id"]] = number
    if limit is None and len(rows) != spec.count:
        warnings.warn(f"{spec.name}: {source} has {len(rows)} rows, expected {spec.count}", stacklevel=3)
    return rows if limit is None else rows[:limit]


def _read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """(1-based line number, parsed object) per non-blank line; bad lines raise an InvalidDataError naming each."""
    return jsonl_rows(path.read_text(encoding="utf-8"), str(path))


def _not_found(name: str, tried: list[str]) -> FileNotFoundError:
    paths = ", ".join(tried) if tried else "(no data directory: none given, $TAGRPO_DATA_DIR unset, no shared/data)"
    extra = ""
    if name == "gpqa_diamond":
        extra = (
            " GPQA-Diamond is gated and not shipped: accept the terms of Idavidrein/gpqa on Hugging Face (or unzip"
            " dataset.zip of github.com/idavidrein/gpqa) and put gpqa_diamond.csv in the data directory or set"
            f" ${GPQA_ENV} to its path."
        )
    hub = "" if name == "gpqa_diamond" else " or unset HF_HUB_OFFLINE to download it from the hub"
    return FileNotFoundError(
        f"benchmark {name!r}: no file at {paths}; pass --data-dir DIR (data_dir=...) or set ${DATA_ENV}{hub}.{extra}"
    )


def load_benchmark(
    name: str, data_dir: str | os.PathLike | None = None, split: str | None = None, limit: int | None = None
) -> list[dict]:
    """Rows ``{id, question, answer, benchmark, reward}`` (+ metadata such as ``level``, ``subject``) of ``name``.

    ``split`` only applies to the hub fallback (default: the registry's split); a local file is the one split.
    """
    if name in BUILTINS:
        return BUILTINS[name](limit=limit)
    spec = BENCHMARKS[check_mode("benchmark", name, benchmark_names())]
    root = data_dir if data_dir is not None else default_data_dir()
    if name == "gpqa_diamond":
        tried = [os.environ[GPQA_ENV]] if os.environ.get(GPQA_ENV) else []
        tried += [str(Path(root) / spec.path)] if root is not None else []
        path = next((p for p in tried if Path(p).exists()), None)
        if path is None:
            raise _not_found(name, tried)
        return _finish(spec, load_gpqa(path), path, limit)
    if root is not None and (Path(root) / spec.path).is_file():
        path = Path(root) / spec.path
        rows = [_map_row(spec, row, number - 1, str(path)) for number, row in _read_jsonl(path)]
        return _finish(spec, rows, str(path), limit)
    if _offline():
        raise _not_found(name, [str(Path(root) / spec.path)] if root is not None else [])
    import datasets

    rows, source = [], f"hub:{spec.hub_id}"
    for config in spec.hub_configs:
        for row in datasets.load_dataset(spec.hub_id, config, split=split or spec.hub_split):
            rows.append(_map_row(spec, dict(row), len(rows), source))
    return _finish(spec, rows, source, limit)


def _gpqa_records(path: Path) -> list[dict]:
    if path.is_dir():
        import datasets

        data = datasets.load_from_disk(str(path))
        if isinstance(data, datasets.DatasetDict):
            data = data["train"] if "train" in data else next(iter(data.values()))
        return [dict(r) for r in data]
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    if suffix in (".jsonl", ".json"):
        return [row for _, row in _read_jsonl(path)]
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def load_gpqa(path: str | os.PathLike, seed: int = 0) -> list[dict]:
    """GPQA rows from the user's copy: the official ``gpqa_diamond.csv`` (or a jsonl/parquet/saved dataset with
    its columns ``Question``, ``Correct Answer``, ``Incorrect Answer 1..3``, ``Record ID``).

    The four options are shuffled with ``random.Random(f"{seed}:{record_id}")`` (the same order on every run),
    listed as ``(A) ...`` lines after the question, and the answer is the letter of the correct one. Rows are
    numbered from 1 in errors (CSV: the record after the header, not the line, as fields may span lines).
    """
    path = Path(path)
    rows = []
    for index, record in enumerate(_gpqa_records(path)):
        number = index + 1
        fields = ["Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3"]
        texts = []
        for name in fields:
            text = _text(record.get(name))
            if not text:
                raise _bad(str(path), number, name, "is missing or empty")
            texts.append(text)
        question, options = texts[0], texts[1:]
        record_id = _text(record.get("Record ID")) or str(index)
        order = list(range(4))
        random.Random(f"{seed}:{record_id}").shuffle(order)
        shuffled = [options[i] for i in order]
        letter = LETTERS[order.index(0)]
        lines = "\n".join(f"({LETTERS[i]}) {text}" for i, text in enumerate(shuffled))
        row = {"id": record_id, "question": f"{question}\n\n{lines}\n\n{GPQA_INSTRUCTION}", "answer": letter}
        row.update(benchmark="gpqa_diamond", reward="choice", options=shuffled, correct_text=options[0])
        for key, name in (("subject", "Subdomain"), ("domain", "High-level domain")):
            if _text(record.get(name)):
                row[key] = _text(record.get(name))
        rows.append(row)
    return rows
