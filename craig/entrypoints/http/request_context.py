"""The outermost layer of every HTTP request: who is asking from where, and what was answered.

:class:`RequestContext` wraps the whole Litestar application (outside its routing, its
exception handling and every middleware), so it sees every answer exactly once: a route's, a
401 of the bearer middleware, a 404 or 405 of the router, a 413 of a body limit, a 500. For
each request it

* takes the caller's ``X-Request-ID`` when it is sane (1-128 characters of letters, digits and
  ``. _ : -``), else makes one, and the client's address (``X-Forwarded-For`` only from a
  trusted proxy); both are bound for the request's duration (:func:`current`): every log line
  of the request carries ``request_id``, the authenticated principal carries both (audit
  entries record them), and the address is the one per-client limits count. The id is also
  bound as the request's *origin* (:func:`craig.adapters.telemetry.originating`): every event
  the request stages gets it as its ``correlation_id`` and every send job as its
  ``origin_request_id``;
* runs it in a ``SERVER`` span when spans are recorded or the caller sent a ``traceparent``
  (continued);
* answers ``HEAD`` on every route that answers ``GET``, as RFC 9110 asks of every server: the
  request runs as the ``GET`` it stands for (the same checks, the same audit entry when it reads
  a record), and the answer keeps its status and headers (``Content-Length`` included) but
  carries no content; an ``Allow`` header that names ``GET`` names ``HEAD`` too;
* adds to the answer ``X-Request-ID``, ``Strict-Transport-Security`` and
  ``X-Content-Type-Options: nosniff``;
* counts it (``craig_http_requests_total`` and ``craig_http_request_duration_seconds`` by
  method, route template (``unmatched`` when no route matched: bounded label cardinality) and
  the status actually sent; 500 when the application raised before answering, 499 when the
  client disconnected before the end of its body);
* and ends it with ONE access line (logger ``craig.access``, at INFO): ``method``, ``route``
  (the route's template, never the raw path), ``status``, ``duration_ms``, ``request_id``,
  ``actor`` (the principal's ``sub`` when authenticated) and ``client_ip``. Never a header
  value, a token, a query string or a body.
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from typing import Any, cast

import attrs
import structlog
from litestar.routes import HTTPRoute
from litestar.types import ASGIApp, Message, Receive, ReceiveMessage, Scope, Send

from craig.adapters.telemetry import SpanKind, originating, span
from craig.domain.access import Principal
from craig.entrypoints import metrics
from craig.entrypoints.http.client_limits import request_client_ip
from craig.entrypoints.http.head import HEAD_KEY
from craig.entrypoints.http.problems import CLIENT_CLOSED_REQUEST, CLIENT_GONE_KEY

HEADER = "x-request-id"
HSTS = "max-age=31536000; includeSubDomains"
_SANE = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_REQUEST_ID = HEADER.encode()
_TRACEPARENT = b"traceparent"
_NOSNIFF = b"x-content-type-options"
_ADDED = ((b"strict-transport-security", HSTS.encode()),)
_ALLOW = b"allow"

access_log = structlog.get_logger("craig.access")
#: Whether ``craig.access`` writes INFO lines (checked per request: the logging module caches it).
_access_level = logging.getLogger("craig.access")


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
    return secrets.token_hex(16)


class RequestContext:
    """The outermost ASGI layer (see the module); websocket and lifespan scopes pass through."""

    def __init__(self, app: ASGIApp, trusted_proxies: str, allowed: Mapping[str, bytes] | None = None) -> None:
        self.app = app
        self.trusted_proxies = trusted_proxies
        #: Each route template's ``Allow`` value (:func:`allowed_methods`).
        self.allowed = dict(allowed or {})
        #: The metric children by label values: ``labels()`` takes a lock and builds a key on
        #: every call, a dict lookup does not.
        self._counted: dict[tuple[str, str, int], Any] = {}
        self._timed: dict[tuple[str, str], Any] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if str(scope["type"]) != "http":  # websocket and lifespan pass through
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        given_id: str | None = None
        traceparent: str | None = None
        for name, value in scope["headers"]:
            if name == _REQUEST_ID:
                given_id = value.decode("latin-1")
            elif name == _TRACEPARENT:
                traceparent = value.decode("latin-1")
        info = RequestInfo(request_id_from(given_id), request_client_ip(scope, self.trusted_proxies), started)
        request_id = info.request_id.encode()
        method = str(scope.get("method", ""))
        # What a client sends may be any token (h11, other ASGI servers): spans, metrics and the
        # access line name a known method, or _OTHER with the original kept aside (OpenTelemetry's
        # convention), so an invented method adds no span name or label of its own.
        known = method in metrics.KNOWN_METHODS
        label, span_method = (method, method) if known else (metrics.OTHER_METHOD, "HTTP")
        span_attributes = {"http.request.method": label, "craig.request_id": info.request_id}
        if not known:
            span_attributes["http.request.method_original"] = method
        head = method == "HEAD"
        if head:  # a GET whose content is not sent (RFC 9110, 9.3.2); the routes know only GET
            scope = cast(Scope, {**scope, "method": "GET", HEAD_KEY: True})
        status = 0

        async def listen() -> ReceiveMessage:
            message = await receive()
            if message["type"] == "http.disconnect" and not status:
                cast(dict[str, Any], scope)[CLIENT_GONE_KEY] = True  # the answer about to be made reaches no one
            return message

        async def answer(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                message["headers"] = _with_ours(message.get("headers") or (), request_id, self.allowed, scope)
            elif head and message["type"] == "http.response.body" and message.get("body"):
                message = {**message, "body": b""}
            await send(message)

        token = _current.set(info)
        try:
            with (
                originating(info.request_id),
                span(
                    span_method,
                    kind=SpanKind.SERVER,
                    parent=traceparent,
                    attributes=span_attributes,
                    exception_is_error=False,  # a 4xx problem is no error of the server's
                ) as current_span,
            ):
                try:
                    await self.app(scope, listen, answer)
                    if not status and scope.get(CLIENT_GONE_KEY):
                        status = CLIENT_CLOSED_REQUEST  # the app had no one to answer
                finally:
                    route = scope.get("path_template")
                    if route:
                        current_span.rename(f"{span_method} {route}")
                        current_span.set("http.route", str(route))
                    current_span.set("http.response.status_code", status or 500)
                    if (status or 500) >= 500:
                        current_span.failed(f"answered {status or 500}")
        finally:
            _current.reset(token)
            self._done(scope, label, method, info, status or 500)

    def _done(self, scope: Scope, label: str, method: str, info: RequestInfo, status: int) -> None:
        """``label``: the method as metrics and logs name it (``_OTHER`` for an unknown one)."""
        route = str(scope.get("path_template") or metrics.UNMATCHED_ROUTE)
        elapsed = time.perf_counter() - info.started
        counted = self._counted.get((label, route, status))
        if counted is None:
            counted = self._counted[(label, route, status)] = metrics.http_requests.labels(label, route, str(status))
        counted.inc()
        timed = self._timed.get((label, route))
        if timed is None:
            timed = self._timed[(label, route)] = metrics.http_latency.labels(label, route)
        timed.observe(elapsed)
        if _access_level.isEnabledFor(logging.INFO):
            user = scope.get("user")
            access_log.info(
                "request",
                method=label,
                **({} if label == method else {"method_original": method}),
                route=scope.get("path_template"),
                status=status,
                duration_ms=round(elapsed * 1000, 3),
                request_id=info.request_id,
                actor=str(user.sub) if isinstance(user, Principal) else None,
                client_ip=info.client_ip,
            )


def _with_ours(
    headers: Any, request_id: bytes, allowed: Mapping[str, bytes], scope: Scope
) -> list[tuple[bytes, bytes]]:
    """The answer's headers with Craig's own: ``X-Request-ID`` and HSTS replace any the app set,
    ``nosniff`` is added unless the app chose its own ``X-Content-Type-Options``. An ``Allow``
    header becomes the matched route's (``allowed``), else names ``HEAD`` with ``GET`` (a 405
    matched no route)."""
    kept: list[tuple[bytes, bytes]] = []
    nosniff = False
    for name, value in headers:  # one pass: this runs for every answer
        lower = name.lower()
        if lower in _REPLACED:
            continue
        if lower == _NOSNIFF:
            nosniff = True
        elif lower == _ALLOW:
            value = allowed.get(scope.get("path_template") or "") or _with_head(value)
        kept.append((name, value))
    if not nosniff:
        kept.append((_NOSNIFF, b"nosniff"))
    kept += _ADDED
    kept.append((_REQUEST_ID, request_id))
    return kept


_REPLACED = frozenset({_REQUEST_ID, b"strict-transport-security"})


def allowed_methods(routes: Iterable[object]) -> dict[str, bytes]:
    """Each HTTP route's template and the ``Allow`` value of every method it answers (``HEAD``
    with ``GET``). Litestar's own OPTIONS answer names only the methods of the first handler
    registered on a path when several share it (``GET`` and ``POST`` on ``/v1/cases``: it said
    ``OPTIONS, POST``); the route itself knows them all."""
    allowed: dict[str, bytes] = {}
    for route in routes:
        if isinstance(route, HTTPRoute):
            methods = set(route.methods) | ({"HEAD"} if "GET" in route.methods else set())
            allowed[route.path_format] = ", ".join(sorted(methods)).encode()
    return allowed


def _with_head(allow: bytes) -> bytes:
    """An ``Allow`` value with ``HEAD`` after ``GET`` when it names ``GET`` and not ``HEAD``."""
    methods = [method.strip() for method in allow.split(b",")]
    if b"GET" not in methods or b"HEAD" in methods:
        return allow
    methods.insert(methods.index(b"GET") + 1, b"HEAD")
    return b", ".join(methods)
