"""Backends that answer rephrasing (and solver) requests, the request budget, and the backend factory.

Every backend has ``kind``, ``model`` and ``async run(requests, emit, budget)``: it answers the requests it can
and calls ``emit(request, completion, error)`` for each as soon as it is done (``error`` is a short reason when
the request failed for good). It asks ``budget.acquire()`` before each request it sends (retries included) and
stops issuing when the budget says no; requests already in flight finish.

- ``openai`` (:class:`tagrpo.rephrase.client.OpenAIBackend`): any OpenAI-compatible server, asynchronous;
- ``transformers`` (:class:`TransformersBackend`): a local model, batched ``generate``;
- ``rule``: the embedded world's rule-based rephraser (``tagrpo.toy.rephraser.RuleBackend``, imported only when
  chosen).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

BACKENDS = ("openai", "transformers", "rule")


def official_api(base_url: str | None) -> bool:
    """Whether requests go to OpenAI's own API (no base URL, or one on api.openai.com)."""
    return base_url is None or "api.openai.com" in base_url


@dataclass
class Request:
    """One request: ``kind`` is ``rephrase`` or ``solve``; ``text`` is the question it transforms or answers."""

    key: str
    row_id: str
    kind: str
    transform: str
    variant: int
    text: str
    messages: list[dict[str, str]]


@dataclass
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


Emit = Callable[[Request, "Completion | None", "str | None"], None]


@dataclass
class Budget:
    """Counters of requests, tokens and cost, and the limits that stop new requests (None: no limit).

    Every request sent counts, retries included. Cost is ``prompt_tokens * price_in + completion_tokens *
    price_out`` per million tokens, from each reply's ``usage``; it is known only when a reply arrives, so the
    requests in flight when ``max_cost`` is reached may add to it.
    """

    max_requests: int | None = None
    max_cost: float | None = None
    price_in: float = 0.0
    price_out: float = 0.0
    priced: bool = True  # False: no known price, the cost is reported as None
    requests: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    stopped: str | None = None
    errors: Counter = field(default_factory=Counter)

    def acquire(self) -> bool:
        """Count one more request, or return False (and record why) once a limit is reached."""
        if self.stopped is None and self.max_requests is not None and self.requests >= self.max_requests:
            self.stopped = f"max_requests={self.max_requests} reached"
        if self.stopped is None and self.max_cost is not None and self.cost >= self.max_cost:
            self.stopped = f"max_cost=${self.max_cost:g} reached (spent ${self.cost:.4f})"
        if self.stopped is not None:
            return False
        self.requests += 1
        return True

    def record(self, completion: Completion) -> None:
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        self.cost += (completion.prompt_tokens * self.price_in + completion.completion_tokens * self.price_out) / 1e6

    def counts(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "retries": self.retries,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost, 6) if self.priced else None,
            "budget_stopped": self.stopped,
            "request_errors": dict(self.errors),
        }


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
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._tok = AutoTokenizer.from_pretrained(self.model)
        self._tok.padding_side = "left"
        if self._tok.pad_token is None:
            self._tok.pad_token = self._tok.eos_token
        device = "cuda" if torch.cuda.is_available() else "cpu"
        self._lm = AutoModelForCausalLM.from_pretrained(self.model).to(device).eval()

    def _prompt(self, messages: list[dict[str, str]]) -> str:
        if getattr(self._tok, "chat_template", None):
            return self._tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return "\n\n".join(m["content"] for m in messages) + "\n\n"

    def generate(self, batch: list[list[dict[str, str]]]) -> list[Completion]:
        """Completions of a batch of chat message lists (``tagrpo.evaluation.sampling.generate_batch``)."""
        import torch

        from tagrpo.evaluation.sampling import generate_batch

        if self._lm is None:
            self._load()
        torch.manual_seed(self.seed)
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
            completions = await asyncio.to_thread(self.generate, [r.messages for r in batch])
            for request, completion in zip(batch, completions, strict=True):
                emit(request, completion, None)

    async def aclose(self) -> None:
        return None
