"""Rephrased-question data: schema and validation, loaders, and the rule for short rephrasing lists."""

from __future__ import annotations

from tagrpo.data.benchmarks import (
    BENCHMARK_NAMES,
    BENCHMARKS,
    BenchmarkSpec,
    benchmark_names,
    default_data_dir,
    load_benchmark,
    load_gpqa,
    register_benchmark,
)
from tagrpo.data.loaders import load_questions, load_rows
from tagrpo.data.schema import DataProblem, InvalidDataError, ensure_valid, validate_rows
from tagrpo.data.short import SHORT_RULES, fit_rephrasings

__all__ = [
    "SHORT_RULES",
    "DataProblem",
    "InvalidDataError",
    "ensure_valid",
    "fit_rephrasings",
    "load_questions",
    "load_rows",
    "validate_rows",
    "BENCHMARKS",
    "BENCHMARK_NAMES",
    "BenchmarkSpec",
    "benchmark_names",
    "default_data_dir",
    "load_benchmark",
    "load_gpqa",
    "register_benchmark",
]
