"""Servers on 127.0.0.1 that misbehave at the TCP level, for clients' timeouts and retries:
one that accepts and never answers, one that drops each connection once a request begins."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
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


@attrs.define
class FreezingProxy:
    """A TCP proxy to a real server that can stop answering: while ``frozen`` is set it
    forwards nothing either way on any connection, old or new, and closes none (a server
    stopped with SIGSTOP, a storage stall, a partition)."""

    port: int
    frozen: asyncio.Event = attrs.field(factory=asyncio.Event)
    thawed: asyncio.Event = attrs.field(factory=asyncio.Event)

    def freeze(self) -> None:
        self.thawed.clear()
        self.frozen.set()

    def thaw(self) -> None:
        self.frozen.clear()
        self.thawed.set()


Upstream = Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def loopback_server(handle: Handler, port: int = 0) -> AsyncIterator[int]:
    """A server on 127.0.0.1 (``port``, or a free one: yielded) that runs ``handle`` for each
    connection in a task of its own; every such task is cancelled on the way out."""
    tasks: set[asyncio.Task[None]] = set()

    def track(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.create_task(handle(reader, writer))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    server = await asyncio.start_server(track, "127.0.0.1", port)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, thawed: asyncio.Event) -> None:
    try:
        while data := await reader.read(65536):
            await thawed.wait()  # frozen: hold what arrived, send nothing
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


@asynccontextmanager
async def freezing_proxy(upstream: Upstream, port: int = 0) -> AsyncIterator[FreezingProxy]:
    """On 127.0.0.1 (``port``, or a free one), each connection forwarded to a connection
    ``upstream`` opens."""
    proxy = FreezingProxy(0)
    proxy.thawed.set()

    async def serve(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            await proxy.thawed.wait()  # frozen: a new connection is accepted and never answered
            server_reader, server_writer = await upstream()
            await asyncio.gather(
                _pump(client_reader, server_writer, proxy.thawed), _pump(server_reader, client_writer, proxy.thawed)
            )
        finally:
            client_writer.close()

    async with loopback_server(serve, port) as bound:
        proxy.port = bound
        try:
            yield proxy
        finally:
            proxy.thaw()


@asynccontextmanager
async def freezing_postgres(url: str) -> AsyncIterator[tuple[FreezingProxy, str]]:
    """A :func:`freezing_proxy` in front of the PostgreSQL ``url`` names (TCP or a unix
    socket), and the URL that reaches the same database through it."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    host, port = parsed.host, parsed.port
    if host is None:  # postgresql://user@/db?host=/socket/dir&port=N
        socket_dir, socket_port = str(parsed.query["host"]), str(parsed.query["port"])

        async def upstream() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            return await asyncio.open_unix_connection(f"{socket_dir}/.s.PGSQL.{socket_port}")
    else:

        async def upstream() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            return await asyncio.open_connection(host, port or 5432)

    async with freezing_proxy(upstream) as proxy:
        proxied = parsed.set(host="127.0.0.1", port=proxy.port, query={})
        yield proxy, proxied.render_as_string(hide_password=False)
