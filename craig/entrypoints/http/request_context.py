"""Who is asking from where, for one request: its id and the client's address.

The id is the caller's ``X-Request-ID`` when it sends a sane one (1-128 characters of letters,
digits and ``. _ : -``), else a new one; the response carries it back in ``X-Request-ID``. Both
are bound for the request's duration: every log line of the request carries ``request_id``, the
authenticated principal carries both (audit entries record them), and the client's address is
the one the per-client limits count (``X-Forwarded-For`` only from a trusted proxy).
"""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar

import attrs
import structlog
from litestar.datastructures import Headers, MutableScopeHeaders
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from craig.entrypoints.http.client_limits import request_client_ip

HEADER = "x-request-id"
#: Where the request's :class:`RequestInfo` is kept in the ASGI scope, for the ``before_send``
#: hook (which runs after the middleware has returned).
_STATE_KEY = "craig.request_info"
_SANE = re.compile(r"[A-Za-z0-9._:-]{1,128}")


@attrs.frozen
class RequestInfo:
    request_id: str
    client_ip: str | None


_current: ContextVar[RequestInfo | None] = ContextVar("craig_request_info", default=None)


def current() -> RequestInfo | None:
    return _current.get()


def request_id_from(header: str | None) -> str:
    """The caller's id when it is sane, else a new one (never an unbounded or odd string)."""
    if header is not None and _SANE.fullmatch(header):
        return header
    return uuid.uuid4().hex


class RequestContextMiddleware(ASGIMiddleware):
    scopes = ("http",)  # type: ignore[assignment]

    def __init__(self, trusted_proxies: str) -> None:
        self.trusted_proxies = trusted_proxies

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        info = RequestInfo(
            request_id_from(Headers.from_scope(scope).get(HEADER)),
            request_client_ip(scope, self.trusted_proxies),
        )

        scope.setdefault("state", {})[_STATE_KEY] = info
        token = _current.set(info)
        try:
            with structlog.contextvars.bound_contextvars(request_id=info.request_id):
                await next_app(scope, receive, send)
        finally:
            _current.reset(token)


async def request_id_header(message: Message, scope: Scope) -> None:
    """``before_send`` hook: every response carries ``X-Request-ID``, whatever answered it (an
    error raised before or inside the middleware stack is answered outside of it)."""
    if message["type"] == "http.response.start":
        info = scope.get("state", {}).get(_STATE_KEY)
        # A path no route serves is answered before any middleware ran: give it an id anyway.
        request_id = (
            info.request_id if isinstance(info, RequestInfo) else request_id_from(Headers.from_scope(scope).get(HEADER))
        )
        MutableScopeHeaders.from_message(message)["X-Request-ID"] = request_id
