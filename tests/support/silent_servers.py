"""Servers on 127.0.0.1 that misbehave at the TCP level, for clients' timeouts and retries:
one that accepts and never answers, one that drops each connection once a request begins."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs


@attrs.define
class TcpServer:
    port: int
    #: One entry per connection accepted, in order.
    accepted: list[asyncio.StreamWriter] = attrs.field(factory=list)


@asynccontextmanager
async def tcp_server(*, drop: bool = False) -> AsyncIterator[TcpServer]:
    """Accepts connections and never answers (or, with ``drop``, closes each one as soon as
    the client has sent something); closed with every connection on the way out."""
    server_state = TcpServer(0)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server_state.accepted.append(writer)
        if drop:
            await reader.read(1)  # the request has begun
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    server_state.port = server.sockets[0].getsockname()[1]
    try:
        yield server_state
    finally:
        for writer in server_state.accepted:
            writer.close()
        server.close()
        await server.wait_closed()
