"""What passes between a rephrase run and its backends: the :class:`Request` sent, the :class:`Completion` that
comes back, the ``emit`` callback that hands it over, and the :class:`Budget` asked before each request.

Both :mod:`tagrpo.rephrase.backends` (the registry and the local backend) and :mod:`tagrpo.rephrase.client` (the
OpenAI-compatible backend) import these from here: the client never imports the registry, and the registry imports
the client only when it builds one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


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
    stop: tuple[str, ...] = ()  # where the reply ends (a server that honours ``stop`` ends it there)
    attempt: int = 0  # 0: the first request of its planned rephrasing; k: its k-th new request after a rejection


ATTEMPT_SEED = 1000  # the sampling seed of attempt k is the first's plus k times this: another sample, reproducibly


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
