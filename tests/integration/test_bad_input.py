"""Bad input gets a clear 4xx problem on every adapter, never a 5xx."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from craig.entrypoints.container import Container
from tests.support.apps import auth, serving

pytestmark = pytest.mark.integration


@pytest.fixture(params=["memory", "postgres"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Container, httpx.AsyncClient]]:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    async with serving(request.param, tmp_path, pg_url) as served:
        yield served


async def test_a_nul_character_in_text_is_422_not_503(api: tuple[Container, httpx.AsyncClient]) -> None:
    container, client = api
    response = await client.post("/v1/cases", json={"title": "a\u0000b"}, headers=auth(container))
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert "retry-after" not in response.headers


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"[]", b'{"title": 5}', b'{"title": ""}', b"\xff\xfe"],
)
async def test_malformed_bodies_are_4xx_problems(api: tuple[Container, httpx.AsyncClient], body: bytes) -> None:
    container, client = api
    headers = {**auth(container), "Content-Type": "application/json", "Idempotency-Key": uuid.uuid4().hex}
    response = await client.post("/v1/cases", content=body, headers=headers)
    assert 400 <= response.status_code < 500
    assert response.headers["content-type"] == "application/problem+json"
