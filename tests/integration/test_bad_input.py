"""Bad input gets a clear 4xx problem on every adapter, never a 5xx."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from craig.domain.access import Role
from craig.entrypoints.container import Container
from tests.support.apps import auth, serving

pytestmark = pytest.mark.integration

#: A referral the public form accepts, as JSON text.
REFERRAL = b'{"reporter": {"name": "Olive"}, "child": {"first_name": "Rosalind"}, "concern": "left alone all night"}'


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


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "application/xml"],
)
async def test_a_json_body_not_sent_as_json_is_415_and_never_read(
    api: tuple[Container, httpx.AsyncClient], content_type: str | None
) -> None:
    """What a web page can make its visitors' browsers send anywhere without a CORS preflight
    (``text/plain``, a form, a Blob without a type) is refused before it is read: on the
    anonymous intake form and on an authenticated write alike, and nothing is written."""
    container, client = api
    headers = {} if content_type is None else {"Content-Type": content_type}
    intake = await client.post("/intake/referrals", content=REFERRAL, headers=headers)
    case = await client.post("/v1/cases", content=b'{"title": "Roe family"}', headers={**auth(container), **headers})
    for response in (intake, case):
        assert response.status_code == 415, response.text
        problem = response.json()
        assert problem["type"].endswith("/problems/unsupported-media-type")
        assert "application/json" in problem["detail"]
    listed = await client.get("/v1/cases", headers=auth(container))
    assert listed.json()["items"] == []
    referrals = await client.get("/v1/referrals", headers=auth(container, role=Role.SCREENER))
    assert referrals.json()["items"] == []


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "application/merge-patch+json"]
)
async def test_json_and_structured_json_types_are_read(
    api: tuple[Container, httpx.AsyncClient], content_type: str
) -> None:
    container, client = api
    headers = {**auth(container), "Content-Type": content_type}
    response = await client.post("/v1/cases", content=b'{"title": "Roe family"}', headers=headers)
    assert response.status_code == 201, response.text
    intake = await client.post("/intake/referrals", content=REFERRAL, headers={"Content-Type": content_type})
    assert intake.status_code == 202, intake.text
