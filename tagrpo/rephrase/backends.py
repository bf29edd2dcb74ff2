"""Backends that answer rephrasing (and solver) requests and the registry of backends (the requests, replies and
budget they share: :mod:`tagrpo.rephrase.protocol`).

Every backend has ``kind``, ``model`` and ``async run(requests, emit, budget)``: it answers the requests it can
and calls ``emit(request, completion, error)`` for each as soon as it is done (``error`` is a short reason when
the request failed for good). It asks ``budget.acquire()`` before each request it sends (retries included) and
stops issuing when the budget says no; requests already in flight finish.

:data:`BACKENDS` maps each ``--backend`` name to its :class:`BackendSpec`:

- ``openai`` (:class:`tagrpo.rephrase.client.OpenAIBackend`): any OpenAI-compatible server, asynchronous;
- ``transformers`` (:class:`TransformersBackend`): a local model, batched ``generate``;
- others added with :func:`register_backend` (the embedded world's ``rule`` backend: ``tagrpo.toy.plugins``, a
  plug-in the registry imports on its first use, see :mod:`tagrpo.common.registry`).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tagrpo.common.errors import InputError
from tagrpo.common.registry import Registry
from tagrpo.rephrase.checks import CheckResult
from tagrpo.rephrase.protocol import ATTEMPT_SEED, Budget, Completion, Emit, Request

logger = logging.getLogger(__name__)
DUMMY_KEY = "EMPTY"


class Backend(Protocol):
    kind: str
    model: str

    async def run(self, requests: Sequence[Request], emit: Emit, budget: Budget) -> None: ...

    async def aclose(self) -> None: ...


class TransformersBackend:
    """A local transformers model: the chat template when the tokenizer has one, left-padded batches of
    ``batch_size``, greedy at temperature 0 and sampled otherwise (seeded)."""

    kind = "transformers"

    def __init__(self, model: str, temperature: float, max_tokens: int, batch_size: int, seed: int) -> None:
        self.model = model
        self.temperature, self.max_tokens, self.batch_size, self.seed = temperature, max_tokens, batch_size, seed
        self._tok: Any = None
        self._lm: Any = None

    def _load(self) -> None:
        from tagrpo.generation import load_causal_lm  # torch and transformers load with the first batch

        self._lm, self._tok = load_causal_lm(self.model, padding_side="left")

    def _prompt(self, messages: list[dict[str, str]]) -> str:
        if getattr(self._tok, "chat_template", None):
            return self._tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return "\n\n".join(m["content"] for m in messages) + "\n\n"

    def generate(self, batch: list[list[dict[str, str]]], attempt: int = 0) -> list[Completion]:
        """Completions of a batch of chat message lists (``tagrpo.generation.generate_batch``), seeded by the
        attempt its requests are (a request asked again draws another sample)."""
        import torch

        from tagrpo.generation import generate_batch

        if self._lm is None:
            self._load()
        torch.manual_seed(self.seed + ATTEMPT_SEED * attempt)
        prompts = [self._prompt(m) for m in batch]
        rows = generate_batch(self._lm, self._tok, prompts, 1, self.temperature, 1.0, self.max_tokens)
        return [Completion(*row[0]) for row in rows]

    async def run(self, requests: Sequence[Request], emit: Emit, budget: Budget) -> None:
        for start in range(0, len(requests), self.batch_size):
            batch = []
            for request in requests[start : start + self.batch_size]:
                if not budget.acquire():
                    break
                batch.append(request)
            if not batch:
                return
            completions = await asyncio.to_thread(self.generate, [r.messages for r in batch], batch[0].attempt)
            for request, completion in zip(batch, completions, strict=True):
                emit(request, completion, None)

    async def aclose(self) -> None:
        return None


def _sampling(cfg, solver: bool) -> tuple[float, int]:
    """``(temperature, max_tokens)`` of a rephraser (``cfg``'s) or a solver (greedy, ``solver_max_tokens``)."""
    return (0.0, cfg.solver_max_tokens) if solver else (cfg.temperature, cfg.max_tokens)


def _openai(cfg, model: str, solver: bool) -> Backend:
    from tagrpo.rephrase.client import OpenAIBackend

    key = os.environ.get(cfg.api_key_env)
    if not key:
        if cfg.base_url is None:
            raise InputError(f"set ${cfg.api_key_env} to the API key (or pass --base-url for a local server)")
        logger.info("$%s is not set: using a dummy key for %s", cfg.api_key_env, cfg.base_url)
        key = DUMMY_KEY
    temperature, max_tokens = _sampling(cfg, solver)
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
        cfg.extra_fields(),
    )


def _transformers(cfg, model: str, solver: bool) -> Backend:
    temperature, max_tokens = _sampling(cfg, solver)
    return TransformersBackend(model, temperature, max_tokens, cfg.concurrency, cfg.seed)


@dataclass(frozen=True)
class BackendSpec:
    """What ``tagrpo rephrase`` asks of a backend besides its replies.

    ``make(cfg, model, solver)`` builds it from a ``RephraseConfig`` for ``model`` (``solver``: to answer the
    accepted rephrasings, greedily, up to ``cfg.solver_max_tokens``). ``check(original, reply)`` replaces
    :func:`~tagrpo.rephrase.checks.check_rephrasing` for a backend that knows exactly what is equivalent; such a
    backend keeps the type plan as it is (no reordering in place of a renaming for a question with nothing to
    rename, a rule of the generic checks). ``preflight(rows, plan)`` raises before any request when the rows or
    the plan ``[(type, variant), ...]`` do not suit the backend. ``self_solving``: the backend answers the solver
    requests itself, whatever ``--solver`` names.
    """

    make: Callable[[Any, str, bool], Backend]
    check: Callable[[str, str], CheckResult] | None = None
    preflight: Callable[[list[dict], list[tuple[str, int]]], None] | None = None
    self_solving: bool = False


BACKENDS: Registry[BackendSpec] = Registry({"openai": BackendSpec(_openai), "transformers": BackendSpec(_transformers)})


def register_backend(
    name: str,
    make: Callable[[Any, str, bool], Backend],
    *,
    check: Callable[[str, str], CheckResult] | None = None,
    preflight: Callable[[list[dict], list[tuple[str, int]]], None] | None = None,
    self_solving: bool = False,
) -> None:
    """Make ``--backend name`` available (see :class:`BackendSpec`); a second registration replaces the first."""
    BACKENDS[name] = BackendSpec(make, check, preflight, self_solving)
