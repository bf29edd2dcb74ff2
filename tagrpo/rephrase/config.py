"""The options of a rephrase run (:class:`RephraseConfig`), their command-line flags, the data and the backend."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
from dataclasses import dataclass, field
from typing import Any

from tagrpo.errors import InputError
from tagrpo.modes import check_mode
from tagrpo.rephrase.backends import BACKENDS, TransformersBackend, official_api
from tagrpo.rephrase.report import check_out_path
from tagrpo.rephrase.templates import type_plan

logger = logging.getLogger(__name__)
DUMMY_KEY = "EMPTY"
# Dollars per 1M prompt / completion tokens on api.openai.com (list prices); nothing else has a known price.
KNOWN_PRICES = {"gpt-4-turbo": (10.0, 30.0), "gpt-4o": (2.5, 10.0), "gpt-4o-mini": (0.15, 0.6), "gpt-4.1": (2.0, 8.0)}
CANONICAL = ("id", "prompt", "answer", "rephrasings", "rephrasing_provenance")
TOKEN_LIMIT_PARAMS = ("auto", "max_tokens", "max_completion_tokens", "both")


def _help(text: str, default: Any = dataclasses.MISSING) -> Any:
    return field(default=default, metadata={"help": text})


@dataclass
class RephraseConfig:
    """Every option of a rephrase run (``tagrpo rephrase --help`` lists them with these helps)."""

    data: str = _help("a benchmark name (math_train, math500, ..., or toy_world) or a jsonl/parquet file", "math_train")
    data_dir: str | None = _help("where benchmark files live (default: $TAGRPO_DATA_DIR or ../shared/data)", None)
    limit: int | None = _help("use only the first LIMIT questions (toy_world: how many to draw, default 64)", None)
    n: int = _help("rephrasings per question (N)", 3)
    types: str | None = _help("comma list of paraphrase,rename,format,reorder to cycle through (default: all)", None)
    templates_file: str | None = _help("YAML/JSON file mapping type (or 'system') -> template with {question}", None)
    backend: str = _help("openai (any compatible server), transformers (a local model) or rule (toy world)", "openai")
    base_url: str | None = _help("server URL, e.g. http://localhost:8000/v1 (default: OpenAI's API)", None)
    model: str = _help("model name (openai) or model directory / hub id (transformers)", "gpt-4-turbo")
    api_key_env: str = _help(
        "environment variable holding the API key (unset: a dummy key for --base-url)", "OPENAI_API_KEY"
    )
    concurrency: int = _help("requests in flight at once (transformers: the batch size)", 32)
    max_retries: int = _help("retries per request on 429, 5xx, timeouts and malformed replies", 6)
    timeout_s: float = _help("seconds before a request times out", 120.0)
    max_requests: int | None = _help("stop issuing requests after this many in this run (retries count)", None)
    max_cost: float | None = _help("stop issuing requests once this run has spent this many dollars", None)
    price_in: float | None = _help(
        "dollars per 1M prompt tokens (default: the list price of a known OpenAI model on api.openai.com, else"
        " none: the run is not priced)", None
    )
    price_out: float | None = _help("dollars per 1M completion tokens (default: as --price-in)", None)
    temperature: float = _help("sampling temperature of the rephraser (0: greedy)", 0.7)
    max_tokens: int = _help("maximum tokens of a rephrasing", 1024)
    out: str = _help("output data set, .jsonl or .parquet", "outputs/rephrase/rephrased.jsonl")
    cache: str | None = _help("result cache (default: OUT.cache.jsonl)", None)
    min_length_ratio: float = _help("smallest accepted length of a rephrasing over the original's", 0.5)
    max_length_ratio: float = _help("largest accepted length of a rephrasing over the original's", 2.0)
    solver: str | None = _help("also require a solver to answer each rephrasing right: 'same' or a model name", None)
    solver_max_tokens: int = _help("maximum tokens of a solver answer", 2048)
    backoff_base_s: float = _help("first retry delay before jitter (doubles per retry)", 1.0)
    backoff_max_s: float = _help("largest retry delay without a Retry-After header", 60.0)
    token_limit_param: str = _help(
        "name of the completion limit sent: auto (max_completion_tokens to api.openai.com, both names elsewhere),"
        " max_tokens, max_completion_tokens or both", "auto"
    )
    seed: int = _help("sampling seed (toy_world: the seed of the drawn questions)", 0)

    def __post_init__(self) -> None:
        check_mode("backend", self.backend, BACKENDS)
        if self.max_cost is not None and self.prices is None:
            raise InputError(
                f"--max-cost needs a price, and model {self.model!r} at {self.base_url or 'api.openai.com'} has no "
                "known one: give --price-in and --price-out (or --max-requests)"
            )
        check_mode("token_limit_param", self.token_limit_param, TOKEN_LIMIT_PARAMS)
        type_plan(self.n, self.types)
        check_out_path(self.out)
        if self.concurrency < 1 or self.max_retries < 0:
            raise InputError("concurrency must be >= 1 and max_retries >= 0")
        if not 0 < self.min_length_ratio <= self.max_length_ratio:
            raise InputError(
                f"need 0 < min_length_ratio <= max_length_ratio, got {self.min_length_ratio}, {self.max_length_ratio}"
            )

    @property
    def prices(self) -> tuple[float, float] | None:
        """Dollars per 1M (prompt, completion) tokens: the user's, else a known list price, else None."""
        if self.price_in is not None or self.price_out is not None:
            return (self.price_in or 0.0, self.price_out or 0.0)
        if self.backend == "openai" and official_api(self.base_url) and self.model in KNOWN_PRICES:
            return KNOWN_PRICES[self.model]
        return None

    @property
    def cache_path(self) -> str:
        return self.cache or self.out + ".cache.jsonl"


def load_source_rows(cfg: RephraseConfig) -> list[dict]:
    """Rows ``{id, prompt, answer, ...metadata}`` from a benchmark name, ``toy_world`` or a jsonl/parquet file."""
    from tagrpo.data import BENCHMARK_NAMES, load_benchmark, load_questions

    if cfg.data == "toy_world":
        from tagrpo.toy.world import question_rows

        rows = [{k: v for k, v in r.items() if k != "rephrasings"} for r in question_rows(cfg.limit or 64, cfg.seed, 0)]
        return [{**r, "benchmark": "toy_world", "reward": "math"} for r in rows]
    if cfg.data in BENCHMARK_NAMES:
        rows = load_benchmark(cfg.data, data_dir=cfg.data_dir, limit=cfg.limit)
        return [
            {"id": r["id"], "prompt": r["question"], **{k: v for k, v in r.items() if k != "question"}} for r in rows
        ]
    rows = [{k: v for k, v in r.items() if k not in CANONICAL[3:]} for r in load_questions(cfg.data)]
    return rows[: cfg.limit] if cfg.limit is not None else rows


def make_backend(cfg: RephraseConfig, model: str, solver: bool = False):
    """The backend of ``cfg.backend`` for ``model`` (a solver answers greedily, up to ``solver_max_tokens``)."""
    temperature = 0.0 if solver else cfg.temperature
    max_tokens = cfg.solver_max_tokens if solver else cfg.max_tokens
    if cfg.backend == "rule":
        from tagrpo.toy.rephraser import RuleBackend

        return RuleBackend()
    if cfg.backend == "transformers":
        return TransformersBackend(model, temperature, max_tokens, cfg.concurrency, cfg.seed)
    from tagrpo.rephrase.client import OpenAIBackend

    key = os.environ.get(cfg.api_key_env)
    if not key:
        if cfg.base_url is None:
            raise InputError(f"set ${cfg.api_key_env} to the API key (or pass --base-url for a local server)")
        logger.info("$%s is not set: using a dummy key for %s", cfg.api_key_env, cfg.base_url)
        key = DUMMY_KEY
    return OpenAIBackend(
        model,
        key,
        cfg.base_url,
        cfg.concurrency,
        cfg.max_retries,
        cfg.timeout_s,
        temperature,
        max_tokens,
        cfg.seed,
        cfg.backoff_base_s,
        cfg.backoff_max_s,
        cfg.token_limit_param,
    )


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """One ``--flag`` per :class:`RephraseConfig` field (``tagrpo.cliargs``), with the field's help."""
    from tagrpo.cliargs import add_dataclass_arguments

    modes = {"backend": BACKENDS, "token_limit_param": TOKEN_LIMIT_PARAMS}
    return add_dataclass_arguments(parser, RephraseConfig, choices=modes)


def config_from_args(args: argparse.Namespace) -> RephraseConfig:
    names = {f.name for f in dataclasses.fields(RephraseConfig)}
    return RephraseConfig(**{k: v for k, v in vars(args).items() if k in names and v is not None})
