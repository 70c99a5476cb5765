"""Who is asking from where, for one request: its id and the client's address.

The id is the caller's ``X-Request-ID`` when it sends a sane one (1-128 characters of letters,
digits and ``. _ : -``), else a new one; the response carries it back in ``X-Request-ID``. Both
are bound for the request's duration: every log line of the request carries ``request_id``, the
authenticated principal carries both (audit entries record them), and the client's address is
the one the per-client limits count (``X-Forwarded-For`` only from a trusted proxy).

The id is also bound as the request's *origin* (:func:`craig.adapters.telemetry.originating`):
every event the request stages gets it as its ``correlation_id`` and every send job as its
``origin_request_id``, so the consumer's and the send worker's log lines carry it too.

Each request runs in a ``SERVER`` span (when tracing is on) that continues the caller's
``traceparent``, and ends with ONE access line (logger ``craig.access``, written by the
``before_send`` hook once the response's last byte is handed over, so it tells the status
that was sent even when an error was answered outside the middleware): ``method``, ``route``
(the route's template, never the raw path), ``status``, ``duration_ms``, ``request_id``,
``actor`` (the principal's ``sub`` when authenticated) and ``client_ip``. Never a header value,
a token, a query string or a body.
"""

from __future__ import annotations

import re
import time
import uuid
from contextvars import ContextVar

import attrs
import structlog
from litestar.datastructures import Headers, MutableScopeHeaders
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from craig.adapters.telemetry import SpanKind, originating, span
from craig.domain.access import Principal
from craig.entrypoints.http.client_limits import request_client_ip

HEADER = "x-request-id"
#: Where the request's :class:`RequestInfo` is kept in the ASGI scope, for the ``before_send``
#: hook (which runs after the middleware has returned).
_STATE_KEY = "craig.request_info"
#: The status of the response being sent, from its start message to its last body message.
_STATUS_KEY = "craig.response_status"
_SANE = re.compile(r"[A-Za-z0-9._:-]{1,128}")


access_log = structlog.get_logger("craig.access")


@attrs.frozen
class RequestInfo:
    request_id: str
    client_ip: str | None
    #: ``time.perf_counter()`` when the request arrived
    started: float = attrs.field(factory=time.perf_counter)


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
        method = str(scope.get("method", ""))
        attributes: dict[str, str | int | float | bool] = {
            "http.request.method": method,
            "url.scheme": str(scope.get("scheme", "http")),
            "craig.request_id": info.request_id,
        }
        try:
            with (
                originating(info.request_id),
                span(
                    method,
                    kind=SpanKind.SERVER,
                    parent=Headers.from_scope(scope),
                    attributes=attributes,
                    exception_is_error=False,  # a 4xx problem is no error of the server's
                ) as current,
            ):
                status = 500

                async def observed(message: Message) -> None:
                    nonlocal status
                    if message["type"] == "http.response.start":
                        status = int(message["status"])
                    await send(message)

                try:
                    await next_app(scope, receive, observed)
                except Exception as error:  # answered outside: its status, as the handler will tell it
                    status = int(getattr(error, "status_code", 500))
                    raise
                finally:
                    route = scope.get("path_template")
                    if route:
                        current.rename(f"{method} {route}")
                        current.set("http.route", str(route))
                    current.set("http.response.status_code", status)
                    if status >= 500:
                        current.failed(f"answered {status}")
        finally:
            _current.reset(token)


async def request_id_header(message: Message, scope: Scope) -> None:
    """``before_send`` hook: every response carries ``X-Request-ID``, whatever answered it (an
    error raised before or inside the middleware stack is answered outside of it); once its
    last byte is handed over, the request's access line is written."""
    state = scope.setdefault("state", {})
    if message["type"] == "http.response.start":
        info = state.get(_STATE_KEY)
        if not isinstance(info, RequestInfo):
            # A path no route serves is answered before any middleware ran: give it an id anyway.
            info = RequestInfo(request_id_from(Headers.from_scope(scope).get(HEADER)), None)
            state[_STATE_KEY] = info
        MutableScopeHeaders.from_message(message)["X-Request-ID"] = info.request_id
        state[_STATUS_KEY] = int(message["status"])
    elif message["type"] == "http.response.body" and not message.get("more_body", False):
        info, status = state.get(_STATE_KEY), state.pop(_STATUS_KEY, None)
        if isinstance(info, RequestInfo) and status is not None:
            _access_line(scope, info, status)


def _access_line(scope: Scope, info: RequestInfo, status: int) -> None:
    user = scope.get("user")
    access_log.info(
        "request",
        method=str(scope.get("method", "")),
        route=scope.get("path_template"),
        status=status,
        duration_ms=round((time.perf_counter() - info.started) * 1000, 3),
        request_id=info.request_id,
        actor=str(user.sub) if isinstance(user, Principal) else None,
        client_ip=info.client_ip,
    )
