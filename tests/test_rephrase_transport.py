"""The lean HTTP/1.1 transport: chunked and close-delimited replies, stale keep-alive connections, timeouts; and
the client's default transport through the same retries."""

from __future__ import annotations

import asyncio
import json
from collections import deque

import httpx2
import pytest
from openai_stub_server import StubServer
from test_rephrase_client import config

from tagrpo.rephrase import run_rephrase
from tagrpo.rephrase.transport import PlainHTTPTransport, use_plain_transport

REPLY = json.dumps({"choices": [{"message": {"content": "hi"}}]}).encode()


async def _raw_server(mode: str, seen: list[int]) -> asyncio.base_events.Server:
    """Replies in ``mode``: ``chunked``, ``close`` (no length, read to EOF), ``drop`` (keep-alive header, then
    close the connection after each reply, so a reused one is stale), ``silent`` (never reply)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(ln.split(b":")[1]) for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length")
                )
                await reader.readexactly(length)
                seen.append(1)
                if mode == "silent":
                    await asyncio.sleep(10)
                if mode == "chunked":
                    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (REPLY[:10], REPLY[10:])) + b"0\r\n\r\n"
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + body
                    )
                elif mode == "close":
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + REPLY
                    )
                    await writer.drain()
                    break
                else:
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(REPLY), REPLY))
                await writer.drain()
                if mode == "drop":
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


@pytest.mark.parametrize("mode", ["chunked", "close", "drop", "keep"])
def test_reply_framings_and_stale_connections(mode):
    async def go() -> list[int]:
        seen: list[int] = []
        server = await _raw_server(mode, seen)
        port = server.sockets[0].getsockname()[1]
        client = httpx2.AsyncClient(transport=PlainHTTPTransport(), timeout=5)
        for _ in range(3):
            reply = await client.post(f"http://127.0.0.1:{port}/v1/chat/completions", json={"a": 1})
            assert reply.status_code == 200 and reply.json() == json.loads(REPLY)
            await asyncio.sleep(0.01)
        await client.aclose()
        server.close()
        return seen

    assert len(asyncio.run(go())) == 3  # a stale connection is replaced without sending the request twice


class _ClosedByPeer:
    """A writer whose peer closes the connection as soon as a request is written (EOF not yet seen)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader, self.closed = reader, False

    def write(self, data: bytes) -> None:
        self.reader.feed_eof()

    async def drain(self) -> None:
        return None

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


def test_a_reused_connection_closed_by_the_server_is_retried_once_on_a_new_one():
    async def go() -> list[int]:
        seen: list[int] = []
        server = await _raw_server("keep", seen)
        port = server.sockets[0].getsockname()[1]
        transport = PlainHTTPTransport()
        stale = asyncio.StreamReader()
        transport._idle[("127.0.0.1", port)] = [(stale, _ClosedByPeer(stale))]
        client = httpx2.AsyncClient(transport=transport, timeout=5)
        reply = await client.post(f"http://127.0.0.1:{port}/x", json={})
        assert reply.json() == json.loads(REPLY)
        await client.aclose()
        server.close()
        return seen

    assert len(asyncio.run(go())) == 1


def test_timeouts_and_refused_connections_raise_httpx_errors():
    async def go() -> None:
        server = await _raw_server("silent", [])
        port = server.sockets[0].getsockname()[1]
        client = httpx2.AsyncClient(transport=PlainHTTPTransport(), timeout=0.2)
        with pytest.raises(httpx2.ReadTimeout):
            await client.post(f"http://127.0.0.1:{port}/x", json={})
        server.close()
        await server.wait_closed()
        with pytest.raises(httpx2.ConnectError):
            await client.post(f"http://127.0.0.1:{port}/x", json={})
        await client.aclose()

    asyncio.run(go())


def test_use_plain_transport(monkeypatch):
    for var in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    assert use_plain_transport("http://localhost:8000/v1")
    assert not use_plain_transport("https://api.openai.com/v1") and not use_plain_transport(None)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy:3128")
    assert not use_plain_transport("http://localhost:8000/v1")


def test_default_transport_gets_the_same_retries(tmp_path):
    with StubServer() as server:
        server.faults_by_key[("q1", "rename")] = deque(["500", "malformed", "429:0", "slow:2"])
        summary = run_rephrase(config(tmp_path, server, timeout_s=0.5, http_transport="httpx"))
        assert summary["accepted"] == 12 and summary["retries"] == 4
        assert summary["request_errors"] == {"http_500": 1, "malformed": 1, "http_429": 1, "timeout": 1}
