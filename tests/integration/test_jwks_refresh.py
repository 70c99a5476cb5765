"""The JWKS key set under a slow, failing or rotating identity provider (a real HTTP server on
127.0.0.1), through the real app: known keys never wait, unknown ``kid``s cost at most one
shared fetch per refresh interval."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from craig.entrypoints.settings import AuthSettings
from tests.support.apps import serving
from tests.support.jwks import JwksServer, bearer, ec_key, jwk, jwks_server, rsa_key

pytestmark = pytest.mark.integration

KNOWN = rsa_key()
ROTATED = rsa_key()
LATE = ec_key()
ROUTES = ["/v1/me", "/v1/cases", "/v1/foster-homes"]  # each route has its own middleware stack


@asynccontextmanager
async def app_for(
    idp: JwksServer, tmp_path: Path, *, refresh: float, timeout: float = 60.0
) -> AsyncIterator[httpx.AsyncClient]:
    auth = AuthSettings(jwks_url=idp.url, jwks_refresh_seconds=refresh, jwks_fetch_timeout_seconds=timeout)
    async with serving("memory", tmp_path, auth=auth) as (_container, client):
        yield client


async def me(client: httpx.AsyncClient, headers: dict[str, str], route: str = "/v1/me") -> int:
    return (await client.get(route, headers=headers)).status_code


async def blocked_refresh(client: httpx.AsyncClient, idp: JwksServer, headers: dict[str, str]) -> asyncio.Task[int]:
    """A request for an unknown kid whose refresh now hangs in the identity provider. (A request
    that joined a background refresh begun before the hold is simply sent again.)"""
    idp.hold()
    for _ in range(100):
        task = asyncio.create_task(me(client, headers))
        while not task.done() and not idp.held.is_set():
            await asyncio.sleep(0.01)
        if idp.held.is_set():
            return task
        await task
    raise AssertionError("no refresh reached the identity provider")


async def eventually(status: int, client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    """Repeat the request until it answers ``status`` (generous bound; no timing asserted)."""
    for _ in range(600):
        if await me(client, headers) == status:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never answered {status}")


async def test_known_keys_answer_while_a_refresh_hangs_and_waiting_unknown_kids_share_it(tmp_path: Path) -> None:
    with jwks_server([jwk(KNOWN, "known")]) as idp:
        async with app_for(idp, tmp_path, refresh=0.01) as client:
            assert await me(client, bearer(KNOWN, "known")) == 200
            idp.keys.append(jwk(LATE, "late"))
            first = await blocked_refresh(client, idp, bearer(LATE, "late"))
            fetches = idp.fetches
            waiting = [first, *(asyncio.create_task(me(client, bearer(LATE, "late"), r)) for r in ROUTES)]

            known = await asyncio.gather(*(me(client, bearer(KNOWN, "known"), r) for r in ROUTES * 5))

            assert known == [200] * 15
            assert not any(task.done() for task in waiting)  # the refresh is still blocked...
            assert idp.fetches == fetches  # ...and no second one began
            idp.release()
            assert await asyncio.gather(*waiting) == [200] * 4  # all waited for that one fetch


async def test_a_refresh_that_outlasts_its_timeout_is_abandoned_and_the_kid_refused(tmp_path: Path) -> None:
    with jwks_server([jwk(KNOWN, "known")]) as idp:
        # The timeout is short against the hang (held until released), not against the machine.
        async with app_for(idp, tmp_path, refresh=0.01, timeout=2.0) as client:
            await eventually(200, client, bearer(KNOWN, "known"))
            idp.keys.append(jwk(LATE, "late"))
            unknown = await blocked_refresh(client, idp, bearer(LATE, "late"))

            assert await unknown == 401  # answered while the identity provider still hangs
            assert await me(client, bearer(KNOWN, "known")) == 200
            idp.release()


async def test_when_the_identity_provider_is_down_known_keys_work_and_unknown_kids_are_401(tmp_path: Path) -> None:
    with jwks_server([jwk(KNOWN, "known")]) as idp:
        async with app_for(idp, tmp_path, refresh=0.01) as client:
            assert await me(client, bearer(KNOWN, "known")) == 200
            idp.stop()
            for _ in range(5):
                await asyncio.sleep(0.02)  # past the refresh interval: each round may fetch again
                assert await me(client, bearer(LATE, "late")) == 401
                assert await me(client, bearer(KNOWN, "known")) == 200


async def test_a_rotated_key_is_accepted_after_the_interval_and_the_withdrawn_one_refused(tmp_path: Path) -> None:
    with jwks_server([jwk(KNOWN, "known")]) as idp:
        async with app_for(idp, tmp_path, refresh=0.05) as client:
            assert await me(client, bearer(KNOWN, "known")) == 200
            idp.keys = [jwk(ROTATED, "rotated")]
            await eventually(200, client, bearer(ROTATED, "rotated"))
            await eventually(401, client, bearer(KNOWN, "known"))


async def test_many_unknown_kids_within_one_interval_cost_one_fetch(tmp_path: Path) -> None:
    """The startup fetch is held, so every request waits for that one fetch; after it, unknown
    kids are refused at once for the rest of the (long) interval. One count across routes
    also shows that every route shares the one key set (Litestar copies middleware)."""
    with jwks_server([jwk(KNOWN, "known")]) as idp:
        idp.hold()
        async with app_for(idp, tmp_path, refresh=3600) as client:
            await idp.wait_held()

            def forged(n: int) -> list[Any]:
                return [me(client, bearer(KNOWN, f"forged-{uuid.uuid4()}"), ROUTES[i % 3]) for i in range(n)]

            first = [asyncio.create_task(c) for c in forged(30)]
            known = [asyncio.create_task(me(client, bearer(KNOWN, "known"), route)) for route in ROUTES]
            idp.release()
            assert await asyncio.gather(*first) == [401] * 30
            assert await asyncio.gather(*known) == [200] * 3

            assert await asyncio.gather(*forged(60)) == [401] * 60
            assert await asyncio.gather(*(me(client, bearer(KNOWN, "known"), r) for r in ROUTES)) == [200] * 3
            assert idp.fetches == 1


async def test_a_token_whose_alg_is_not_its_keys_is_401(tmp_path: Path) -> None:
    """An RS256 token naming the kid of an EC key (and the reverse) is refused, not a 500."""
    with jwks_server([jwk(KNOWN, "rsa"), jwk(LATE, "ec")]) as idp:
        async with app_for(idp, tmp_path, refresh=3600) as client:
            assert await me(client, bearer(KNOWN, "rsa")) == 200
            for headers in (bearer(KNOWN, "ec"), bearer(LATE, "rsa")):
                response = await client.get("/v1/me", headers=headers)
                assert response.status_code == 401, response.text
                assert response.headers["content-type"] == "application/problem+json"
