"""An HTTP/1.1 server on 127.0.0.1 that answers whatever bytes a test scripts, at whatever
pace: for clients facing a partner that breaks the rules (bad headers, a body sent a byte at a
time, JSON nested without end)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import attrs

from tests.support.silent_servers import loopback_server

#: What to send: pieces of the raw answer, each after its delay in seconds.
Script = list[tuple[bytes, float]]


def answer(status: str, body: bytes, *headers: str, content_type: str = "application/json") -> Script:
    """A whole answer at once, with ``Connection: close``."""
    head = [f"HTTP/1.1 {status}", f"Content-Type: {content_type}", f"Content-Length: {len(body)}", *headers]
    return [("\r\n".join([*head, "Connection: close", "", ""]).encode("latin-1") + body, 0.0)]


@attrs.define
class RawHttp:
    port: int
    #: The request lines received, in order (``POST /token``).
    requests: list[str] = attrs.field(factory=list)
    #: Per answer, in order: whether all of it was written (False: the client hung up first).
    written_whole: list[bool] = attrs.field(factory=list)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@asynccontextmanager
async def raw_http(script: Callable[[str, str], Script]) -> AsyncIterator[RawHttp]:
    """``script(method, path)`` says what to answer each request (one per connection)."""
    state = RawHttp(0)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            method, target = head.split(" ", 2)[:2]
            length = next(
                (
                    int(line.split(":", 1)[1])
                    for line in head.split("\r\n")
                    if line.lower().startswith("content-length:")
                ),
                0,
            )
            if length:
                await reader.readexactly(length)
            state.requests.append(f"{method} {target.split('?', 1)[0]}")
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            writer.close()
            return
        try:
            for piece, delay in script(method, target.split("?", 1)[0]):
                await asyncio.sleep(delay)
                writer.write(piece)
                await writer.drain()
            state.written_whole.append(True)
        except (ConnectionError, OSError):
            state.written_whole.append(False)
        finally:
            writer.close()

    async with loopback_server(serve) as port:
        state.port = port
        yield state
