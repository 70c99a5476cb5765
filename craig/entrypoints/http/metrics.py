"""Request counters and durations by route template (not raw path: bounded label cardinality).

:class:`RequestMetrics` wraps the whole application (outside Litestar's exception handling,
routing and every middleware), so each request is counted once with the status actually sent
(read from ``http.response.start``): a 401 of the bearer middleware, a 404 or 405 of the router,
a 413 of a body limit. A request no route matched is labelled ``unmatched``.
"""

from __future__ import annotations

import time

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from craig.entrypoints import metrics


class RequestMetrics:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if str(scope["type"]) != "http":  # websocket and lifespan pass through
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: int | None = None

        async def observe(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, observe)
        finally:
            # No response started: the server answers 500 for an app that raised.
            route = scope.get("path_template") or metrics.UNMATCHED_ROUTE
            method = str(scope.get("method", ""))
            metrics.http_requests.labels(method, route, str(status or 500)).inc()
            metrics.http_latency.labels(method, route).observe(time.perf_counter() - started)
