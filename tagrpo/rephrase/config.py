"""The options of a rephrase run (:class:`RephraseConfig`, which ``tagrpo rephrase``'s flags come from), the
questions it reads (:func:`load_source_rows`, :func:`register_source`) and its backend (:func:`make_backend`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from tagrpo.common.errors import InputError
from tagrpo.common.fields import helped
from tagrpo.common.modes import check_mode
from tagrpo.common.registry import Registry
from tagrpo.rephrase.backends import BACKENDS
from tagrpo.rephrase.protocol import official_api
from tagrpo.rephrase.report import check_out_path
from tagrpo.rephrase.templates import type_plan

# Dollars per 1M prompt / completion tokens on api.openai.com (list prices); nothing else has a known price.
KNOWN_PRICES = {"gpt-4-turbo": (10.0, 30.0), "gpt-4o": (2.5, 10.0), "gpt-4o-mini": (0.15, 0.6), "gpt-4.1": (2.0, 8.0)}
CANONICAL = ("id", "prompt", "answer", "rephrasings", "rephrasing_provenance")
TOKEN_LIMIT_PARAMS = ("auto", "max_tokens", "max_completion_tokens", "both")
# What --extra-body may not set: the fields every request already sends.
SENT_FIELDS = ("model", "messages", "temperature", "seed", "stop", "max_tokens", "max_completion_tokens")
# The --extra-body that makes `transformers serve` sample for a model whose generation_config.json lacks do_sample
# (its generation_config field is a JSON string), and that flag as a user types it.
DO_SAMPLE_BODY = json.dumps({"generation_config": json.dumps({"do_sample": True})})
DO_SAMPLE_FLAG = f"--extra-body '{DO_SAMPLE_BODY}'"
# Question sets of ``--data NAME`` besides the benchmarks: name -> rows(limit, seed), see register_source.
SOURCES: Registry[Callable[[int | None, int], list[dict]]] = Registry()


@dataclass
class RephraseConfig:
    """Every option of a rephrase run (``tagrpo rephrase --help`` lists them with these helps)."""

    data: str = helped(
        "math_train",
        "a benchmark name (math_train, math500, ..., or toy_world) or a jsonl/parquet file",
    )
    data_dir: str | None = helped(None, "where benchmark files live (default: $TAGRPO_DATA_DIR or ../shared/data)")
    limit: int | None = helped(None, "use only the first LIMIT questions (toy_world: how many to draw, default 64)")
    n: int = helped(3, "rephrasings per question (N)")
    types: str | None = helped(None, "comma list of paraphrase,rename,format,reorder to cycle through (default: all)")
    templates_file: str | None = helped(None, "YAML/JSON file mapping type (or 'system') -> template with {question}")
    backend: str = helped("openai", "openai (any compatible server), transformers (a local model) or rule (toy world)")
    base_url: str | None = helped(None, "server URL, e.g. http://localhost:8000/v1 (default: OpenAI's API)")
    model: str = helped("gpt-4-turbo", "model name (openai) or model directory / hub id (transformers)")
    api_key_env: str = helped(
        "OPENAI_API_KEY",
        "environment variable holding the API key (unset: a dummy key for --base-url)",
    )
    concurrency: int = helped(32, "requests in flight at once (transformers: the batch size)")
    max_retries: int = helped(6, "retries per request on 429, 5xx, timeouts and malformed replies")
    attempts: int = helped(1, "requests per planned rephrasing: one the checks reject is asked again (another "
                              "sample), up to this many in all")
    timeout_s: float = helped(120.0, "seconds before a request times out")
    max_requests: int | None = helped(None, "stop issuing requests after this many in this run (retries count)")
    max_cost: float | None = helped(None, "stop issuing requests once this run has spent this many dollars")
    price_in: float | None = helped(
        None,
        "dollars per 1M prompt tokens (default: the list price of a known OpenAI model on api.openai.com, else"
        " none: the run is not priced)",
    )
    price_out: float | None = helped(None, "dollars per 1M completion tokens (default: as --price-in)")
    temperature: float = helped(0.7, "sampling temperature of the rephraser (0: greedy)")
    max_tokens: int = helped(1024, "maximum tokens of a rephrasing")
    out: str = helped("outputs/rephrase/rephrased.jsonl", "output data set, .jsonl or .parquet")
    cache: str | None = helped(None, "result cache (default: OUT.cache.jsonl)")
    min_length_ratio: float = helped(0.5, "smallest accepted length of a rephrasing over the original's")
    max_length_ratio: float = helped(2.0, "largest accepted length of a rephrasing over the original's")
    solver: str | None = helped(None, "also require a solver to answer each rephrasing right: 'same' or a model name")
    solver_max_tokens: int = helped(2048, "maximum tokens of a solver answer")
    backoff_base_s: float = helped(1.0, "first retry delay before jitter (doubles per retry)")
    backoff_max_s: float = helped(60.0, "largest retry delay without a Retry-After header")
    token_limit_param: str = helped(
        "auto",
        "name of the completion limit sent: auto (max_completion_tokens to api.openai.com, both names elsewhere),"
        " max_tokens, max_completion_tokens or both",
    )
    seed: int = helped(0, "sampling seed (toy_world: the seed of the drawn questions)")
    extra_body: str | None = helped(
        None,
        "JSON object of extra fields sent with every request (openai backend): a server's own parameters, e.g. "
        + DO_SAMPLE_FLAG + " makes transformers serve sample for a model whose generation config does not",
    )

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
        if self.concurrency < 1 or self.max_retries < 0 or self.attempts < 1:
            raise InputError("concurrency and attempts must be >= 1 and max_retries >= 0")
        self.extra_fields()
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

    def extra_fields(self) -> dict:
        """``--extra-body`` as a dict ({} when not given); an InputError when it is not a JSON object, sets a field
        every request already sends, or is given to a backend other than openai."""
        if self.extra_body is None:
            return {}
        try:
            fields = json.loads(self.extra_body)
        except json.JSONDecodeError as err:
            raise InputError(f"--extra-body is not JSON ({err}): {self.extra_body!r}") from None
        if not isinstance(fields, dict):
            raise InputError(f"--extra-body must be a JSON object, got {self.extra_body!r}")
        if taken := sorted(set(fields) & set(SENT_FIELDS)):
            raise InputError(f"--extra-body sets {', '.join(taken)}, which every request already sends (use their "
                             "own flags); it may add any field but " + ", ".join(SENT_FIELDS))
        if fields and self.backend != "openai":
            raise InputError(f"--extra-body applies to --backend openai only, not {self.backend}")
        return fields

    @property
    def cache_path(self) -> str:
        return self.cache or self.out + ".cache.jsonl"


def register_source(name: str, rows: Callable[[int | None, int], list[dict]]) -> None:
    """Make ``--data name`` read ``rows(limit, seed)``: rows ``{id, prompt, answer, ...metadata}`` (ahead of a
    benchmark or a file of that name)."""
    SOURCES[name] = rows


def load_source_rows(cfg: RephraseConfig) -> list[dict]:
    """Rows ``{id, prompt, answer, ...metadata}`` from a registered source, a benchmark name or a jsonl/parquet
    file."""
    from tagrpo.data import BENCHMARK_NAMES, load_benchmark, load_questions

    if cfg.data in SOURCES:
        return SOURCES[cfg.data](cfg.limit, cfg.seed)
    if cfg.data in BENCHMARK_NAMES:
        rows = load_benchmark(cfg.data, data_dir=cfg.data_dir, limit=cfg.limit)
        return [
            {"id": r["id"], "prompt": r["question"], **{k: v for k, v in r.items() if k != "question"}} for r in rows
        ]
    rows = [{k: v for k, v in r.items() if k not in CANONICAL[3:]} for r in load_questions(cfg.data)]
    return rows[: cfg.limit] if cfg.limit is not None else rows


def make_backend(cfg: RephraseConfig, model: str, solver: bool = False):
    """The backend of ``cfg.backend`` for ``model`` (a solver answers greedily, up to ``solver_max_tokens``)."""
    return BACKENDS[cfg.backend].make(cfg, model, solver)
