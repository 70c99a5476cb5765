"""A tiny HTTP server for probes and ``/metrics`` off the public API: ``craig worker``'s port
(``CRAIG_WORKERS__METRICS_PORT``) and ``craig serve``'s metrics port (``CRAIG_HTTP__METRICS_PORT``).

Plain asyncio on the process's event loop: it answers GET (and HEAD) on a few fixed paths, one
request per connection, and never blocks the loops beside it (each answer is computed by an
async function). Anything else is 404 or 405. It is not a general web server, and serves no
request body.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager

import attrs
import structlog

log = structlog.get_logger(__name__)

#: How long a client may take to send its request line and headers.
_READ_TIMEOUT_SECONDS = 5.0
_MAX_HEADER_BYTES = 16 * 1024
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 500: "Internal Server Error"}

METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
JSON_CONTENT_TYPE = "application/json"


@attrs.frozen
class Answer:
    status: int
    content_type: str
    body: bytes


#: One path's answer, computed on each request.
Handler = Callable[[], Awaitable[Answer]]


class CannotListen(Exception):
    """The port cannot be bound: one line naming the address."""


async def _answer(handlers: Mapping[str, Handler], reader: asyncio.StreamReader) -> tuple[Answer, bool]:
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _READ_TIMEOUT_SECONDS)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
        return Answer(400, "text/plain", b"bad request\n"), False
    parts = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
    if len(parts) != 3:
        return Answer(400, "text/plain", b"bad request\n"), False
    method, target, _version = parts
    handler = handlers.get(target.split("?", 1)[0])
    if handler is None:
        return Answer(404, "text/plain", b"not found\n"), method == "HEAD"
    if method not in ("GET", "HEAD"):
        return Answer(405, "text/plain", b"method not allowed\n"), False
    try:
        return await handler(), method == "HEAD"
    except Exception as error:
        log.warning("ops server answer failed", path=target, error=f"{type(error).__name__}: {error}")
        return Answer(500, "text/plain", b"internal error\n"), method == "HEAD"


def _serve(handlers: Mapping[str, Handler]) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            answer, head_only = await _answer(handlers, reader)
            headers = (
                f"HTTP/1.1 {answer.status} {_REASONS.get(answer.status, '')}\r\n"
                f"Content-Type: {answer.content_type}\r\n"
                f"Content-Length: {len(answer.body)}\r\n"
                "Connection: close\r\n\r\n"
            )
            writer.write(headers.encode("latin-1") + (b"" if head_only else answer.body))
            await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    return connection


@asynccontextmanager
async def ops_server(host: str, port: int, handlers: Mapping[str, Handler]) -> AsyncIterator[int]:
    """Serve ``handlers`` on ``host:port`` while inside; yields the port bound (``port`` 0 asks
    the system for a free one, which tests use). Raises :class:`CannotListen` when it cannot bind."""
    try:
        server = await asyncio.start_server(_serve(handlers), host, port, limit=_MAX_HEADER_BYTES)
    except OSError as error:
        reason = os.strerror(error.errno) if error.errno else str(error)
        raise CannotListen(f"cannot listen on {host}:{port}: {reason}") from None
    bound = int(server.sockets[0].getsockname()[1])
    log.info("ops server listening", url=f"http://{host}:{bound}", paths=sorted(handlers))
    try:
        yield bound
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2)
