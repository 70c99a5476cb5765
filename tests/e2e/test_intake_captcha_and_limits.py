"""Public intake end to end: a real captcha round trip (siteverify faked at the HTTP level on
127.0.0.1) and the per-client-IP rate limit, on real PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from litestar import Litestar, Request, post
from sqlalchemy import text

from craig.entrypoints.container import Container
from craig.entrypoints.settings import HttpSettings, IntakeSettings
from tests.support.apps import live_server, serving
from tests.support.problems import problem_code

pytestmark = pytest.mark.e2e

SECRET = "0x-test-siteverify-secret"
FORM: dict[str, Any] = {
    "reporter": {"name": "Quentin Caller"},
    "child": {"first_name": "Ada", "age": 7},
    "concern": "Ada says she is always hungry and nobody feeds her at home",
}


@attrs.define
class Siteverify:
    """hCaptcha-compatible: accepts the token ``good``, answers 500 while ``broken``."""

    calls: list[dict[str, str]] = attrs.field(factory=list)
    broken: bool = False

    def app(self) -> Litestar:
        @post("/siteverify", status_code=200)
        async def verify(request: Request[Any, Any, Any]) -> Any:
            form = dict(await request.form())
            self.calls.append(form)
            if self.broken:
                raise RuntimeError("provider down")
            ok = form.get("secret") == SECRET and form.get("response") == "good"
            return {"success": ok, "error-codes": [] if ok else ["invalid-input-response"]}

        return Litestar([verify])


@pytest.fixture
async def provider() -> AsyncIterator[tuple[Siteverify, str]]:
    fake = Siteverify()
    async with live_server(fake.app()) as base:
        yield fake, f"{base}/siteverify"


async def test_captcha_round_trip_then_the_rate_limit(
    provider: tuple[Siteverify, str], tmp_path: Path, pg_url: str
) -> None:
    fake, url = provider
    intake = IntakeSettings(
        require_captcha=True, captcha_secret=SECRET, captcha_verify_url=url, rate_limit_per_minute=4
    )
    async with serving("postgres", tmp_path, pg_url, intake=intake) as (_, client):

        async def submit(token: str | None, **headers: str) -> httpx.Response:
            body = {**FORM, "captcha_token": token} if token is not None else FORM
            return await client.post("/intake/referrals", json=body, headers=headers)

        missing = await submit(None)
        assert missing.status_code == 422 and problem_code(missing.json()) == "captcha-required"
        rejected = await submit("forged")
        assert rejected.status_code == 403 and problem_code(rejected.json()) == "captcha-rejected"
        accepted = await submit("good")
        assert accepted.status_code == 202 and accepted.json()["priority"] == "medium"
        assert fake.calls[-1] == {"secret": SECRET, "response": "good", "remoteip": "127.0.0.1"}
        calls_so_far = len(fake.calls)

        fake.broken = True
        unavailable = await submit("good")
        assert unavailable.status_code == 503 and "retry-after" in unavailable.headers

        # four attempts so far from 127.0.0.1 (every attempt counts): the fifth is refused
        # before the captcha provider is even asked
        limited = await submit("good")
        assert limited.status_code == 429
        assert limited.headers["content-type"] == "application/problem+json"
        assert problem_code(limited.json()) == "rate-limited"
        assert 1 <= int(limited.headers["retry-after"]) <= 15
        assert limited.headers["strict-transport-security"] == "max-age=31536000; includeSubDomains"
        assert len(fake.calls) == calls_so_far + 1

        # X-Forwarded-For from an untrusted peer changes nothing
        spoofed = await submit("good", **{"X-Forwarded-For": "198.51.100.23"})
        assert spoofed.status_code == 429, spoofed.text


async def test_behind_a_trusted_proxy_each_client_has_its_own_limit(tmp_path: Path, pg_url: str) -> None:
    http = HttpSettings(trusted_proxies="127.0.0.1")
    intake = IntakeSettings(rate_limit_per_minute=2)
    async with serving("postgres", tmp_path, pg_url, http=http, intake=intake) as (_, client):

        async def from_client(address: str) -> int:
            response = await client.post(
                "/intake/referrals", json=FORM, headers={"X-Forwarded-For": f"6.6.6.6, {address}"}
            )
            return response.status_code

        assert [await from_client("198.51.100.1") for _ in range(3)] == [202, 202, 429]
        assert [await from_client("198.51.100.2") for _ in range(3)] == [202, 202, 429]


async def _slots(container: Container) -> int:
    async with container.postgres().transaction() as conn:
        return int((await conn.execute(text("SELECT count(*) FROM idempotency_responses"))).scalar_one())


async def test_requests_past_the_limit_claim_no_idempotency_slot(tmp_path: Path, pg_url: str) -> None:
    """Fresh keys past the limit are refused before the idempotency layer claims anything."""
    limit = 3
    http = HttpSettings(trusted_proxies="127.0.0.1")
    async with serving("postgres", tmp_path, pg_url, http=http, intake=IntakeSettings(rate_limit_per_minute=limit)) as (
        container,
        client,
    ):
        statuses = []
        for _ in range(limit + 12):
            response = await client.post(
                "/intake/referrals",
                json=FORM,
                headers={"X-Forwarded-For": "198.51.100.9", "Idempotency-Key": uuid.uuid4().hex},
            )
            statuses.append(response.status_code)
            if response.status_code == 429:
                assert response.headers["content-type"] == "application/problem+json"
                assert problem_code(response.json()) == "rate-limited"
                assert response.json()["detail"].startswith("too many referrals from this address; retry after")
                assert response.json()["instance"] == "/intake/referrals"
                assert 1 <= int(response.headers["retry-after"]) <= 60 / limit
        assert statuses == [202] * limit + [429] * 12
        assert await _slots(container) == limit


async def test_ipv6_clients_are_limited_per_64(tmp_path: Path, pg_url: str) -> None:
    http = HttpSettings(trusted_proxies="127.0.0.1")
    async with serving("postgres", tmp_path, pg_url, http=http, intake=IntakeSettings(rate_limit_per_minute=2)) as (
        _,
        client,
    ):

        async def from_client(address: str) -> int:
            response = await client.post("/intake/referrals", json=FORM, headers={"X-Forwarded-For": address})
            return response.status_code

        # two addresses of one /64 share one budget
        assert [await from_client("2001:db8:aa:1::1"), await from_client("2001:db8:aa:1:ffff:1:2:3")] == [202, 202]
        assert await from_client("2001:db8:aa:1::abcd") == 429
        # the next /64 has a budget of its own, and so has an IPv4 client
        assert [await from_client("2001:db8:aa:2::1") for _ in range(3)] == [202, 202, 429]
        assert [await from_client("198.51.100.3") for _ in range(3)] == [202, 202, 429]
