"""A local HTTP server that speaks the OpenAI chat-completions protocol, for tests and benchmarks.

``POST /v1/chat/completions`` answers ``{"choices": [{"message": {"content": ...}}], "usage": {...}}`` after
``latency_s``. Every request is recorded (arrival time, the ``X-TAGRPO-Job`` header's question id, kind and
transform type, the body, the status sent). Faults are injected from a queue shared by all requests
(``server.faults``) or per ``(id, type)`` (``server.faults_by_key``), consumed in arrival order:

- ``"429"`` or ``"429:SECONDS"``: a rate-limit error with ``Retry-After: SECONDS`` (default 1);
- ``"500"``: an internal server error; ``"401"``: an authentication error;
- ``"slow:SECONDS"``: sleep that long before answering normally (the client's timeout fires first);
- ``"malformed"``: status 200 with a body that is not valid JSON; ``"no_choices"``: valid JSON, ``"choices": []``.

The default reply rewrites the text between ``<question>`` tags of the last user message, wrapped the way LLMs
wrap it (a preamble, a code fence or quotes) so the client's stripping is exercised; solver requests get
``\\boxed{answer}`` from ``server.answers`` by question id. ``server.responder(record) -> str`` overrides both.

In a thread: ``with StubServer(latency_s=0.05) as server: ... server.url``. As a process (benchmarks):
``python tests/openai_stub_server.py --latency 0.05`` prints ``PORT <n>`` and serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

REASONS = {200: "OK", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error"}
WRAPS = {
    "paraphrase": "Rephrased question: Solve this. {q}",
    "rename": "```\nRenamed: {r}\n```",
    "format": '"Format: {q}"',
    "reorder": "Here is the rewritten problem:\n\nReordered: {q}",
}


_MATH_SPAN = re.compile(r"\$[^$]+\$|\\\[.+?\\\]|\\\(.+?\\\)", re.S)
_LETTER = re.compile(r"(?<![\\A-Za-z])([a-z])(?![A-Za-z])")


def rename(question: str) -> str:
    """A real renaming: names the checks see become ``Zelda``, single math letters shift by one (x -> y)."""
    from tagrpo.rephrase.checks import names

    for name in sorted(names(question)):
        question = re.sub(rf"\b{name}\b", "Zelda", question)
    shift = lambda m: m.group(0).replace(m.group(1), chr((ord(m.group(1)) - 96) % 26 + 97))  # noqa: E731
    return _MATH_SPAN.sub(lambda span: _LETTER.sub(shift, span.group(0)), question)


def job_of(headers: dict[str, str]) -> dict[str, Any]:
    """The ``X-TAGRPO-Job`` header (url-quoted JSON ``{"id", "type", "kind"}``), or {} when absent."""
    raw = headers.get("x-tagrpo-job")
    return json.loads(unquote(raw)) if raw else {}


def question_of(body: dict) -> str:
    """The text between ``<question>`` tags of the last user message (the whole message without tags)."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    text = str(users[-1].get("content", "")) if users else ""
    start, end = text.rfind("<question>"), text.rfind("</question>")
    return text[start + len("<question>") : end].strip() if 0 <= start < end else text


class StubServer:
    """An asyncio HTTP/1.1 server (keep-alive) on 127.0.0.1 and port 0, run in a daemon thread."""

    def __init__(self, latency_s: float = 0.0, responder: Callable[[dict], str] | None = None) -> None:
        self.latency_s = latency_s
        self.responder = responder
        self.answers: dict[str, str] = {}
        self.faults: deque[str] = deque()
        self.faults_by_key: dict[tuple[str, str], deque[str]] = {}
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.port = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def keys(self, kind: str = "rephrase") -> list[tuple[str, str]]:
        """``(question id, type)`` of every recorded request of ``kind``, in arrival order."""
        with self._lock:
            return [(r["id"], r["type"]) for r in self.requests if r["kind"] == kind]

    def wait_for(self, count: int, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the server saw {len(self.requests)} requests, not {count}, in {timeout_s} s")
            time.sleep(0.005)

    def start(self) -> StubServer:
        ready = threading.Event()

        def serve() -> None:
            self._loop = asyncio.new_event_loop()
            self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        """Close the listener and every open connection, then stop and close the loop."""
        if self._loop is None or self._server is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop.close()
        self._loop = None

    async def _shutdown(self) -> None:
        self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next_fault(self, key: tuple[str, str]) -> str | None:
        with self._lock:
            queue = self.faults_by_key.get(key)
            if queue:
                return queue.popleft()
            return self.faults.popleft() if self.faults else None

    def _reply(self, record: dict) -> str:
        if self.responder is not None:
            return self.responder(record)
        question = question_of(record["body"])
        if record["kind"] == "solve":
            return f"The answer is \\boxed{{{self.answers.get(record['id'], '0')}}}."
        return WRAPS.get(record["type"], "{q}").replace("{q}", question).replace("{r}", rename(question))

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                status, extra, payload = await self._respond(method, path, headers, body)
                out = [f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}", "Content-Type: application/json"]
                out += [f"{k}: {v}" for k, v in extra.items()] + [f"Content-Length: {len(payload)}", "", ""]
                writer.write("\r\n".join(out).encode("latin-1") + payload)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def _respond(self, method: str, path: str, headers: dict, raw: bytes) -> tuple[int, dict, bytes]:
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            return 404, {}, b'{"error": {"message": "not found"}}'
        body = json.loads(raw or b"{}")
        job = job_of(headers)
        record = {
            "time": time.monotonic(),
            "id": str(job.get("id", "")),
            "type": str(job.get("type", "")),
            "kind": str(job.get("kind", "rephrase")),
            "authorization": headers.get("authorization", ""),
            "body": body,
            "status": 200,
        }
        with self._lock:
            self.requests.append(record)
        fault = self._next_fault((record["id"], record["type"]))
        name, _, arg = (fault or "").partition(":")
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(float(arg) if name == "slow" else self.latency_s)
        finally:
            self.in_flight -= 1
        if name == "429":
            record["status"] = 429
            error = b'{"error": {"message": "rate limited", "type": "rate_limit"}}'
            return 429, {"Retry-After": arg or "1"}, error
        if name == "401":
            record["status"] = 401
            return 401, {}, b'{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}'
        if name == "500":
            record["status"] = 500
            return 500, {}, b'{"error": {"message": "boom", "type": "server_error"}}'
        if name == "malformed":
            return 200, {}, b'{"id": "x", "choices": [{"message": '
        if name == "no_choices":
            return 200, {}, b'{"id": "x", "object": "chat.completion", "created": 0, "model": "stub", "choices": []}'
        content = self._reply(record)
        prompt_text = "".join(str(m.get("content", "")) for m in body.get("messages", []))
        usage = {"prompt_tokens": len(prompt_text) // 4 + 1, "completion_tokens": len(content) // 4 + 1}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        reply = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "stub"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": usage,
        }
        return 200, {}, json.dumps(reply).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds before each reply")
    args = parser.parse_args()
    server = StubServer(latency_s=args.latency).start()
    print(f"PORT {server.port}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
