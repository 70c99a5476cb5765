"""Per-client rate limits, at the front of the request pipeline.

A route opts in with ``opt={"client_rate_limit": "<name>"}``; the app maps each name to the use
case that counts the request (for intake, :class:`craig.usecases.intake.AdmitIntakeClient`).
This middleware sits ahead of the idempotency layer, so a refused request reads no body and
claims no ``Idempotency-Key`` slot: a client sending fresh keys past its limit leaves no rows
behind. The refusal is the usual 429 problem with ``Retry-After``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from litestar.datastructures import Headers
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Receive, Scope, Send

from craig.entrypoints.http.client_ip import client_ip, trusted_networks
from craig.entrypoints.http.problems import ProblemException
from craig.usecases.intake import RateLimited

#: Route ``opt`` key naming the limit a route is counted against.
OPT_KEY = "client_rate_limit"

Admit = Callable[[str | None], Awaitable[None]]


def request_client_ip(scope: Scope, trusted_proxies: str) -> str | None:
    """The client's address: the TCP peer, or X-Forwarded-For from a trusted proxy."""
    peer = scope.get("client")
    address = peer[0] if peer else None
    if not trusted_proxies:
        return address  # no proxy is trusted: the header is never read
    forwarded = Headers.from_scope(scope).getall("x-forwarded-for", [])
    return client_ip(address, forwarded, trusted_networks(trusted_proxies))


class ClientRateLimitMiddleware(ASGIMiddleware):
    scopes = ("http",)  # type: ignore[assignment]

    def __init__(self, limits: Mapping[str, Callable[[], Admit]], trusted_proxies: str) -> None:
        self.limits = dict(limits)
        self.trusted_proxies = trusted_proxies

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        handler = scope.get("route_handler")
        name = handler.opt.get(OPT_KEY) if handler is not None else None
        if name is not None:
            admit = self.limits[name]()
            try:
                await admit(request_client_ip(scope, self.trusted_proxies))
            except RateLimited as limited:
                raise ProblemException(
                    429,
                    "rate-limited",
                    limited.detail,
                    headers={"Retry-After": str(limited.retry_after_seconds)},
                ) from None
        await next_app(scope, receive, send)
