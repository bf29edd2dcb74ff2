"""A lean HTTP/1.1 transport for ``http://`` servers (a local ``vllm serve``, the test server), for ``httpx2``.

The official client's default transport (httpcore2: a connection pool scanned on every request, h11, anyio) costs
about 0.55 of the 1.1 ms of CPU that one chat-completions request takes on the client; this transport does the
same job on asyncio streams in about half of it (``benchmarks/rephrase_throughput.md``). It keeps idle
keep-alive connections per host, sends the request that ``httpx2`` built (headers, ``Content-Length`` and body
as they are), and reads a ``Content-Length``, chunked or read-to-close body. No TLS and no proxies: those go
through the default transport (:func:`use_plain_transport` says when this one applies). A reused connection
that fails before the first byte of the reply (the server closed it while idle) is retried once on a new one.
Timeouts and connection failures raise the ``httpx2`` exceptions the client maps to its own errors.
"""

from __future__ import annotations

import asyncio
import os
from urllib.parse import urlsplit

import httpx2

_PROXY_VARS = ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def use_plain_transport(base_url: str | None) -> bool:
    """True for an ``http://`` base URL with no proxy configured in the environment."""
    return bool(base_url) and urlsplit(base_url).scheme == "http" and not any(os.environ.get(v) for v in _PROXY_VARS)


class _Stale(Exception):
    """A reused connection closed before the reply started."""


class PlainHTTPTransport(httpx2.AsyncBaseTransport):
    """HTTP/1.1 with keep-alive over asyncio streams; at most ``max_idle`` idle connections per host."""

    def __init__(self, max_idle: int = 256) -> None:
        self.max_idle = max_idle
        self._idle: dict[tuple[str, int], list[Connection]] = {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        timeouts = request.extensions.get("timeout", {})
        address = (request.url.host, request.url.port or 80)
        payload = self._encode(request, await request.aread())
        while True:
            reused, connection = await self._connection(address, request, timeouts.get("connect"))
            try:
                status, headers, body, keep = await self._exchange(connection, payload, request, timeouts, reused)
            except _Stale:
                continue
            except BaseException:
                connection[1].close()
                raise
            if keep and len(self._idle.setdefault(address, [])) < self.max_idle:
                self._idle[address].append(connection)
            else:
                connection[1].close()
            return httpx2.Response(status, headers=headers, content=body, request=request)

    @staticmethod
    def _encode(request: httpx2.Request, body: bytes) -> bytes:
        target = request.url.raw_path.decode("ascii")
        lines = [f"{request.method} {target} HTTP/1.1"]
        lines += [f"{k.decode('latin-1')}: {v.decode('latin-1')}" for k, v in request.headers.raw]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    async def _connection(
        self, address: tuple[str, int], request: httpx2.Request, timeout: float | None
    ) -> tuple[bool, Connection]:
        idle = self._idle.get(address, [])
        while idle:
            reader, writer = idle.pop()
            if not reader.at_eof() and not writer.is_closing():
                return True, (reader, writer)
            writer.close()
        try:
            return False, await asyncio.wait_for(asyncio.open_connection(*address), timeout)
        except asyncio.TimeoutError:
            raise httpx2.ConnectTimeout(f"connecting to {address} timed out", request=request) from None
        except OSError as err:
            raise httpx2.ConnectError(f"cannot connect to {address}: {err}", request=request) from None

    async def _exchange(
        self, connection: Connection, payload: bytes, request: httpx2.Request, timeouts: dict, reused: bool
    ) -> tuple[int, list[tuple[str, str]], bytes, bool]:
        reader, writer = connection
        try:
            writer.write(payload)
            await asyncio.wait_for(writer.drain(), timeouts.get("write"))
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeouts.get("read"))
        except asyncio.TimeoutError:
            raise httpx2.ReadTimeout("no reply in time", request=request) from None
        except (asyncio.IncompleteReadError, ConnectionError) as err:
            partial = getattr(err, "partial", b"")
            if reused and not partial:
                writer.close()
                raise _Stale() from None
            raise httpx2.RemoteProtocolError(f"the server closed the connection: {err!r}", request=request) from None
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise httpx2.RemoteProtocolError(f"not an HTTP/1.x status line: {lines[0]!r}", request=request)
        headers = [(k.strip(), v.strip()) for k, _, v in (ln.partition(":") for ln in lines[1:] if ":" in ln)]
        fields = {k.lower(): v for k, v in headers}
        try:
            body, keep = await asyncio.wait_for(self._body(reader, int(parts[1]), fields), timeouts.get("read"))
        except asyncio.TimeoutError:
            raise httpx2.ReadTimeout("the reply body did not arrive in time", request=request) from None
        except (asyncio.IncompleteReadError, ConnectionError, ValueError) as err:
            raise httpx2.ReadError(f"bad reply body: {err!r}", request=request) from None
        keep = keep and fields.get("connection", "").lower() != "close" and parts[0] != "HTTP/1.0"
        if "chunked" in fields.get("transfer-encoding", "").lower():
            headers = [(k, v) for k, v in headers if k.lower() != "transfer-encoding"]
        return int(parts[1]), headers, body, keep

    @staticmethod
    async def _body(reader: asyncio.StreamReader, status: int, fields: dict[str, str]) -> tuple[bytes, bool]:
        """The reply body and whether the connection can be reused."""
        if status in (204, 304) or 100 <= status < 200:
            return b"", True
        if "chunked" in fields.get("transfer-encoding", "").lower():
            chunks = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
                if size == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":
                        pass
                    return b"".join(chunks), True
                chunks.append(await reader.readexactly(size))
                await reader.readexactly(2)
        if "content-length" in fields:
            return await reader.readexactly(int(fields["content-length"])), True
        return await reader.read(), False

    async def aclose(self) -> None:
        for connections in self._idle.values():
            for _, writer in connections:
                writer.close()
        self._idle.clear()
