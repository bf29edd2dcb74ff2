"""The OpenAI-compatible backend: one ``AsyncOpenAI`` client, a bounded number of requests in flight, retries.

``concurrency`` workers share the request list, so at most that many requests are in flight. Each request is one
``client.chat.completions.create`` call. A request is retried up to ``max_retries`` times on 429, 5xx (and
408/409), timeouts, connection errors and replies that are not valid JSON, after a delay drawn with jitter from
an exponential backoff (``backoff_base_s * 2**attempt``, at most ``backoff_max_s``) or, when the server sends one,
``Retry-After`` / ``retry-after-ms`` (capped at ``RETRY_AFTER_CAP_S``, plus up to 10% jitter). A reply header
``x-should-retry: true|false`` overrides the status rule, as in the openai client. A 401, 403 or 404 stops the
run (key, base URL or model is wrong); another 4xx fails that request only.

The retries are this module's, with the client's own switched off (``max_retries=0``): the client sleeps and
resends inside one ``create`` call, out of the run's reach. Here each retry first asks the run's budget
(``--max-requests`` and ``--max-cost`` count retries, and stop them), gives up its place in flight while it waits,
halves the in-flight limit (below) at each timeout, and is counted by reason in the summary (``retries``,
``request_errors``); a 200 reply that is not valid JSON is retried too, which the client never does.

A slow server is not flooded: a request that timed out may still be generating on the server, so every timeout
halves the number of requests allowed in flight (down to one) and every success adds one back (up to
``concurrency``). ``in_flight`` maps each request in flight to its start time, for the progress display.

The completion limit is sent as ``max_completion_tokens`` to api.openai.com (its reasoning models refuse
``max_tokens``) and under both names elsewhere (vLLM, transformers serve and llama.cpp each read one of them);
``token_limit_param`` forces one. A reply longer than the limit means the server ignored it: counted in
``limit_ignored`` and said once in the log.

Each request carries ``X-TAGRPO-Job: {id, type, kind}`` (URL-quoted JSON) so a server log can attribute it. The
API key is only handed to the client; errors are scrubbed of it.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
from collections.abc import Sequence
from urllib.parse import quote

from tagrpo.rephrase.protocol import ATTEMPT_SEED, Budget, Completion, Emit, Request, official_api

logger = logging.getLogger(__name__)
JOB_HEADER = "X-TAGRPO-Job"
FATAL_STATUS = (401, 403, 404)
RETRY_STATUS = (408, 409, 429)
RETRY_AFTER_CAP_S = 120.0  # what the openai client honours at most


class FatalRequestError(ValueError):
    """A reply that no retry can fix (a wrong key, base URL or model name): the run stops."""


class MalformedReply(ValueError):
    """A 200 reply without ``choices[0].message``."""


def retry_after(headers: object) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date), at most
    ``RETRY_AFTER_CAP_S``, else None."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = get(name)
        if value is None:
            continue
        try:
            return min(RETRY_AFTER_CAP_S, max(0.0, float(value) * scale))
        except ValueError:
            pass
        try:
            wait = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
            return min(RETRY_AFTER_CAP_S, max(0.0, wait))
        except (TypeError, ValueError):
            pass
    return None


def should_retry(headers: object) -> bool | None:
    """The server's ``x-should-retry: true|false``, or None when it does not say."""
    value = getattr(headers, "get", lambda name: None)("x-should-retry")
    return {"true": True, "false": False}.get(str(value).strip().lower()) if value is not None else None


class AdaptiveLimit:
    """At most ``limit`` holders at once; ``shrink`` halves the limit (a timeout), ``grow`` adds one back."""

    def __init__(self, maximum: int) -> None:
        self.maximum = self.limit = maximum
        self.holders = 0
        self.changed = asyncio.Condition()

    async def __aenter__(self):
        async with self.changed:
            await self.changed.wait_for(lambda: self.holders < self.limit)
            self.holders += 1

    async def __aexit__(self, *exc):
        async with self.changed:
            self.holders -= 1
            self.changed.notify_all()

    async def resize(self, limit: int) -> None:
        async with self.changed:
            self.limit = max(1, min(self.maximum, limit))
            self.changed.notify_all()


def parse_reply(reply: object) -> Completion:
    """``choices[0].message.content`` and ``usage`` of a ``ChatCompletion`` (no content: the empty text)."""
    try:
        text = reply.choices[0].message.content  # type: ignore[attr-defined]
    except (AttributeError, IndexError, TypeError):
        raise MalformedReply("the reply has no choices[0].message") from None
    usage = getattr(reply, "usage", None)
    prompt, completion = (getattr(usage, name, 0) or 0 for name in ("prompt_tokens", "completion_tokens"))
    return Completion(text or "", int(prompt), int(completion))


class OpenAIBackend:
    """Requests to ``base_url`` (None: the client's default, api.openai.com or ``$OPENAI_BASE_URL``)."""

    kind = "openai"

    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str | None = None,
        concurrency: int = 32,
        max_retries: int = 6,
        timeout_s: float = 120.0,
        temperature: float = 0.7,
        max_tokens: int = 1024,
        seed: int | None = 0,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 60.0,
        token_limit_param: str = "auto",
        extra_body: dict | None = None,
    ) -> None:
        from openai import AsyncOpenAI

        self.model, self.concurrency, self.max_retries = model, concurrency, max_retries
        self.temperature, self.max_tokens, self.seed = temperature, max_tokens, seed
        self.backoff_base_s, self.backoff_max_s = backoff_base_s, backoff_max_s
        self.base_url, self.extra_body = base_url, dict(extra_body or {})
        if token_limit_param == "auto":
            token_limit_param = "max_completion_tokens" if official_api(base_url) else "both"
        self.limit_names = ("max_tokens", "max_completion_tokens") if token_limit_param == "both" else (
            token_limit_param,
        )
        self.in_flight: dict[int, float] = {}
        self.limit_ignored = 0
        self._secret = api_key
        for name in ("httpx2", "httpx"):  # they log one INFO line per request
            if logging.getLogger(name).level == logging.NOTSET:
                logging.getLogger(name).setLevel(logging.WARNING)
        self.client = AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)

    def scrub(self, text: str) -> str:
        return text.replace(self._secret, "***") if len(self._secret) >= 4 else text

    def _params(self, request: Request) -> dict:
        """The arguments of ``chat.completions.create`` for ``request``."""
        header = quote(json.dumps({"id": request.row_id, "type": request.transform, "kind": request.kind}))
        params: dict = {"model": self.model, "messages": request.messages, "extra_headers": {JOB_HEADER: header}}
        params.update({name: self.max_tokens for name in self.limit_names})
        params["temperature"] = self.temperature
        if request.stop:
            params["stop"] = list(request.stop)
        if self.seed is not None:
            params["seed"] = self.seed + request.variant + ATTEMPT_SEED * request.attempt
        if self.extra_body:
            params["extra_body"] = self.extra_body
        return params

    def _classify(self, err: Exception) -> tuple[bool, float | None, str]:
        """``(retryable, Retry-After seconds, reason)`` of a failed attempt; raises FatalRequestError."""
        import openai

        if isinstance(err, openai.APIStatusError):
            status = err.status_code
            if status in FATAL_STATUS:
                raise FatalRequestError(
                    f"HTTP {status} from the server: check the API key, the base URL and the model name"
                ) from None
            retryable = status >= 500 or status in RETRY_STATUS
            told = should_retry(err.response.headers)
            return retryable if told is None else told, retry_after(err.response.headers), f"http_{status}"
        if isinstance(err, openai.APITimeoutError):
            return True, None, "timeout"
        if isinstance(err, openai.APIConnectionError):
            return True, None, "connection"
        if isinstance(err, (json.JSONDecodeError, MalformedReply, openai.APIResponseValidationError)):
            return True, None, "malformed"
        raise err

    def delay(self, attempt: int, hint: float | None) -> float:
        """Seconds before retry ``attempt`` (0-based): Retry-After when given, else jittered backoff."""
        if hint is not None:
            return hint * (1.0 + 0.1 * random.random())
        return min(self.backoff_max_s, self.backoff_base_s * 2**attempt) * random.uniform(0.5, 1.0)

    def _check_limit(self, completion: Completion) -> None:
        if completion.completion_tokens > self.max_tokens * 1.1 + 8:
            self.limit_ignored += 1
            if self.limit_ignored == 1:
                logger.warning(
                    "the server at %s returned %d completion tokens for a limit of %d: it ignores %s; set "
                    "--token-limit-param to the name it reads", self.base_url or "api.openai.com",
                    completion.completion_tokens, self.max_tokens, " and ".join(self.limit_names),
                )

    async def _send(self, params: dict, limit: AdaptiveLimit) -> Completion:
        key = id(params)
        async with limit:
            self.in_flight[key] = time.monotonic()
            try:
                return parse_reply(await self.client.chat.completions.create(**params))
            finally:
                self.in_flight.pop(key, None)

    async def _attempts(
        self, request: Request, budget: Budget, limit: AdaptiveLimit
    ) -> tuple[Completion | None, str | None]:
        params = self._params(request)
        attempt = 0
        while True:
            try:
                completion = await self._send(params, limit)
                await limit.resize(limit.limit + 1)
                self._check_limit(completion)
                return completion, None
            except Exception as err:
                retryable, hint, reason = self._classify(err)
            if reason == "timeout":
                await limit.resize(limit.limit // 2)
                logger.info("timeout: at most %d requests in flight now", limit.limit)
            budget.errors[reason] += 1
            if not retryable or attempt >= self.max_retries:
                logger.warning("request %s/%s failed: %s", request.row_id, request.transform, self.scrub(reason))
                return None, reason
            wait = self.delay(attempt, hint)
            logger.debug(
                "retry %d of %s/%s in %.2f s (%s)", attempt + 1, request.row_id, request.transform, wait, reason
            )
            attempt += 1
            await asyncio.sleep(wait)
            if not budget.acquire():
                return None, "budget"
            budget.retries += 1

    async def run(self, requests: Sequence[Request], emit: Emit, budget: Budget) -> None:
        queue = iter(requests)
        limit = AdaptiveLimit(self.concurrency)

        async def worker() -> None:
            for request in queue:
                if not budget.acquire():
                    return
                completion, error = await self._attempts(request, budget, limit)
                emit(request, completion, error)

        tasks = [asyncio.ensure_future(worker()) for _ in range(min(self.concurrency, len(requests)))]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def aclose(self) -> None:
        await self.client.close()
