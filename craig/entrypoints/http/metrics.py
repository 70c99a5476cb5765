"""Request counters and latency by route template (not raw path: bounded label cardinality)."""

from __future__ import annotations

import time

from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from craig.entrypoints import metrics


class RequestMetrics(ASGIMiddleware):
    scopes = ("http",)  # type: ignore[assignment]

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        started = time.perf_counter()
        status = 500

        async def observe(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await next_app(scope, receive, observe)
        finally:
            route = scope.get("path_template") or "unmatched"
            method = str(scope.get("method", ""))
            metrics.http_requests.labels(method, route, str(status)).inc()
            metrics.http_latency.labels(method, route).observe(time.perf_counter() - started)
