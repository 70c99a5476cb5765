"""The OAuth2 token cache of the partner gateway, on a controllable monotonic clock."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from craig.adapters.partners.http import parse_retry_after
from craig.adapters.partners.tokens import TokenCache, TokenGrant, TokenUnavailable
from craig.domain.constants import TOKEN_REFRESH_LEAD_TIME
from craig.domain.exchange import PartnerAnswer
from craig.domain.partners import Partner

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Endpoint:
    def __init__(self, lifetime: float = 3600.0) -> None:
        self.lifetime = lifetime
        self.issued = 0
        self.fail = False

    async def __call__(self, partner: Partner) -> TokenGrant:
        await asyncio.sleep(0.01)  # let concurrent callers pile up
        if self.fail:
            raise TokenUnavailable(PartnerAnswer(503))
        self.issued += 1
        return TokenGrant(f"tok-{self.issued}", timedelta(seconds=self.lifetime))


def a_partner(secret: str = "s") -> Partner:
    return Partner(
        id=uuid.UUID(int=7),
        name="p",
        base_url="http://127.0.0.1:1",
        token_url="http://127.0.0.1:1/t",
        client_id="c",
        client_secret=secret,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


async def test_refreshed_thirty_seconds_before_expiry() -> None:
    clock, endpoint = Clock(), Endpoint(lifetime=3600)
    cache = TokenCache(endpoint, TOKEN_REFRESH_LEAD_TIME, clock)
    assert await cache.token(a_partner()) == "tok-1"
    clock.t += 3600 - 30 - 0.001
    assert await cache.token(a_partner()) == "tok-1"
    clock.t += 0.002
    assert await cache.token(a_partner()) == "tok-2"


async def test_short_lived_tokens_are_refreshed_at_half_their_life() -> None:
    clock, endpoint = Clock(), Endpoint(lifetime=20)
    cache = TokenCache(endpoint, TOKEN_REFRESH_LEAD_TIME, clock)
    await cache.token(a_partner())
    clock.t += 9.9
    assert await cache.token(a_partner()) == "tok-1"
    clock.t += 0.2
    assert await cache.token(a_partner()) == "tok-2"


async def test_one_refresh_at_a_time_per_partner() -> None:
    endpoint = Endpoint()
    cache = TokenCache(endpoint, TOKEN_REFRESH_LEAD_TIME, Clock())
    tokens = await asyncio.gather(*(cache.token(a_partner()) for _ in range(20)))
    assert set(tokens) == {"tok-1"} and endpoint.issued == 1


async def test_a_401_replaces_the_token_once_for_all_callers() -> None:
    endpoint = Endpoint()
    cache = TokenCache(endpoint, TOKEN_REFRESH_LEAD_TIME, Clock())
    rejected = await cache.token(a_partner())
    replaced = await asyncio.gather(*(cache.replace(a_partner(), rejected) for _ in range(10)))
    assert set(replaced) == {"tok-2"} and endpoint.issued == 2


async def test_new_credentials_never_reuse_the_old_token() -> None:
    endpoint = Endpoint()
    cache = TokenCache(endpoint, TOKEN_REFRESH_LEAD_TIME, Clock())
    assert await cache.token(a_partner("old")) == "tok-1"
    assert await cache.token(a_partner("new")) == "tok-2"


async def test_a_failed_refresh_keeps_a_still_valid_token_but_never_an_expired_one() -> None:
    clock, endpoint = Clock(), Endpoint(lifetime=100)
    cache = TokenCache(endpoint, TOKEN_REFRESH_LEAD_TIME, clock)
    await cache.token(a_partner())
    endpoint.fail = True
    clock.t += 60  # past refresh time (100 - 50), before expiry
    assert await cache.token(a_partner()) == "tok-1"
    clock.t += 40  # expired
    with pytest.raises(TokenUnavailable):
        await cache.token(a_partner())


def test_retry_after_forms() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert parse_retry_after("120", now) == timedelta(seconds=120)
    assert parse_retry_after("Thu, 01 Jan 2026 12:01:00 GMT", now) == timedelta(seconds=60)
    assert parse_retry_after("Thu, 01 Jan 2026 11:00:00 GMT", now) == timedelta(0)
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after(None, now) is None
