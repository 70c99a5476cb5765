"""A fake partner agency: a real Litestar app served by uvicorn on 127.0.0.1.

It speaks what a partner speaks (an OAuth2 client-credentials token endpoint, a POST endpoint for
transactions, a paginated ``GET /records``) and can be told to misbehave: fail N times per
correlation id, answer 429 with ``Retry-After``, be slow, expire every token, serve a broken
page. It records every request it receives: correlation id, token, arrival time, answer.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
from litestar import Litestar, Request, Response, get, post

from tests.support.apps import live_server

CLIENT_ID = "craig-test-client"
CLIENT_SECRET = "s3cret-for-the-fake-partner"


@attrs.define
class Token:
    value: str
    issued_at: float
    expires_at: float
    revoked: bool = False


@attrs.frozen
class Received:
    correlation_id: str
    token: str
    at: float
    status: int


@attrs.define
class FakePartner:
    # --- behaviour (tests set these) ---
    token_lifetime_seconds: float = 3600.0
    fail_each: int = 0  # every correlation id fails its first N requests ...
    fail_status: int = 503  # ... with this status
    throttle_next: int = 0  # the next N requests answer 429 ...
    retry_after_seconds: int = 1  # ... with this Retry-After
    delay_seconds: float = 0.0  # every POST waits this long before answering (0 releases waiters)
    echo_failures: bool = False  # a failing answer quotes the request body back, as many APIs do
    records: list[dict[str, Any]] = attrs.field(factory=list)
    records_status: int = 200
    records_body: Any = None  # when set, served (as JSON) instead of a real page
    records_text: str | None = None  # when set, served as text/html instead of JSON
    # --- what it saw ---
    tokens: dict[str, Token] = attrs.field(factory=dict)
    received: list[Received] = attrs.field(factory=list)
    delivered: Counter[str] = attrs.field(factory=Counter)  # 2xx answers per correlation id
    arrivals: list[float] = attrs.field(factory=list)  # monotonic arrival time of every POST
    bodies: list[bytes] = attrs.field(factory=list)  # the body of every POST
    headers: list[dict[str, str]] = attrs.field(factory=list)  # the headers of every POST
    unauthorized: int = 0
    _counter: Any = attrs.field(factory=itertools.count)

    def expire_tokens(self) -> None:
        for token in self.tokens.values():
            token.revoked = True

    def tokens_used_after_expiry(self) -> list[Received]:
        return [r for r in self.received if r.token in self.tokens and r.at >= self.tokens[r.token].expires_at]

    # --- the endpoints ---
    def _valid(self, request: Request[Any, Any, Any]) -> str | None:
        header = request.headers.get("authorization", "")
        value = header.removeprefix("Bearer ").strip()
        token = self.tokens.get(value)
        if token is None or token.revoked or time.monotonic() >= token.expires_at:
            self.unauthorized += 1
            return None
        return value

    async def token(self, request: Request[Any, Any, Any]) -> Response[Any]:
        form = await request.form()
        basic = request.headers.get("authorization", "")
        expected = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if form.get("grant_type") != "client_credentials":
            return Response({"error": "unsupported_grant_type"}, status_code=400)
        if basic != f"Basic {expected}":
            return Response({"error": "invalid_client"}, status_code=401)
        now = time.monotonic()
        value = f"tok-{next(self._counter)}"
        self.tokens[value] = Token(value, now, now + self.token_lifetime_seconds)
        body = {"access_token": value, "token_type": "Bearer", "expires_in": self.token_lifetime_seconds}
        return Response(body)

    async def transactions(self, request: Request[Any, Any, Any]) -> Response[Any]:
        arrived = time.monotonic()
        self.arrivals.append(arrived)
        correlation = request.headers.get("x-correlation-id", "")
        self.bodies.append(await request.body())
        self.headers.append(dict(request.headers))
        token = self._valid(request)
        status = 201
        headers: dict[str, str] = {}
        if token is None:
            status = 401
        elif self.throttle_next > 0:
            self.throttle_next -= 1
            status, headers = 429, {"Retry-After": str(self.retry_after_seconds)}
        elif sum(1 for r in self.received if r.correlation_id == correlation and r.status != 401) < self.fail_each:
            status = self.fail_status
        self.received.append(Received(correlation, token or "", arrived, status))
        while time.monotonic() < arrived + self.delay_seconds:  # setting it to 0 releases waiters
            await asyncio.sleep(0.02)
        if status == 201:
            self.delivered[correlation] += 1
        elif self.echo_failures:
            return Response({"invalid": self.bodies[-1].decode()}, status_code=status, headers=headers)
        return Response({"received": correlation}, status_code=status, headers=headers)

    async def list_records(self, request: Request[Any, Any, Any]) -> Response[Any]:
        if self._valid(request) is None:
            return Response({"error": "invalid_token"}, status_code=401)
        if self.records_status != 200:
            return Response({"error": "down"}, status_code=self.records_status)
        if self.records_text is not None:
            return Response(self.records_text, media_type="text/html")
        if self.records_body is not None:
            return Response(self.records_body)
        page, per_page = int(request.query_params.get("page", 1)), int(request.query_params.get("per_page", 50))
        chosen = self.records[(page - 1) * per_page : page * per_page]
        return Response({"items": chosen, "page": page, "per_page": per_page, "total": len(self.records)})

    def app(self) -> Litestar:
        fake = self

        @post("/oauth/token", status_code=200)
        async def token(request: Request[Any, Any, Any]) -> Response[Any]:
            return await fake.token(request)

        @post("/transactions")
        async def transactions(request: Request[Any, Any, Any]) -> Response[Any]:
            return await fake.transactions(request)

        @get("/records")
        async def records(request: Request[Any, Any, Any]) -> Response[Any]:
            return await fake.list_records(request)

        return Litestar(route_handlers=[token, transactions, records], logging_config=None)


@asynccontextmanager
async def serving_partner(partner: FakePartner | None = None) -> AsyncIterator[tuple[FakePartner, str]]:
    """The fake partner on a live 127.0.0.1 port; yields it and its base URL."""
    fake = partner or FakePartner()
    async with live_server(fake.app()) as base:
        yield fake, base


def registration(base: str, name: str = "Partner Agency", **extra: Any) -> dict[str, Any]:
    """The ``POST /v1/exchange/partners`` body for a fake partner at ``base``."""
    return {
        "name": name,
        "base_url": base,
        "token_url": f"{base}/oauth/token",
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        **extra,
    }
