"""The audit trail over real HTTP: who read it, replays and refusals recorded, request ids."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import httpx
import pytest

from craig.domain.access import Role
from craig.entrypoints.container import Container
from tests.support.apps import auth, serving

pytestmark = pytest.mark.integration


@attrs.define
class Api:
    container: Container
    client: httpx.AsyncClient
    ann: dict[str, str]
    boss: dict[str, str]

    async def entries(self, **query: str) -> list[dict[str, object]]:
        response = await self.client.get("/v1/audit", params={"limit": "200", **query}, headers=self.boss)
        assert response.status_code == 200, response.text
        items: list[dict[str, object]] = response.json()["items"]
        return items


@pytest.fixture(params=["memory", "postgres"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    async with serving(request.param, tmp_path, pg_url) as (container, client):
        yield Api(
            container,
            client,
            auth(container, role=Role.CASEWORKER, name="Ann"),
            auth(container, role=Role.SUPERVISOR, name="Sue"),
        )


async def test_a_case_worker_may_not_read_the_trail_and_the_refusal_is_recorded(api: Api) -> None:
    response = await api.client.get("/v1/audit", headers={**api.ann, "X-Request-ID": "req-ann-1"})
    assert response.status_code == 403
    assert response.headers["x-request-id"] == "req-ann-1"
    [denied] = [e for e in await api.entries(outcome="denied") if e["request_id"] == "req-ann-1"]
    assert (denied["action"], denied["resource_type"], denied["actor_role"], denied["actor_name"]) == (
        "list",
        "audit_entry",
        "caseworker",
        "Ann",
    )


async def test_reading_the_trail_is_recorded_with_the_ids_it_returned(api: Api) -> None:
    first = await api.client.get("/v1/audit", headers={**api.boss, "X-Request-ID": "first-read"})
    assert first.status_code == 200
    second = await api.entries(action="list", resource_type="audit_entry")
    recorded = next(e for e in second if e["request_id"] == "first-read")
    assert recorded["resource_ids"] == [item["id"] for item in first.json()["items"]]
    assert recorded["actor_name"] == "Sue" and recorded["outcome"] == "allowed"
    assert recorded["client_ip"] == "127.0.0.1"


async def test_an_odd_request_id_is_replaced_by_one_of_ours(api: Api) -> None:
    for odd in ("x" * 129, "has space", "semi;colon"):
        response = await api.client.get("/v1/me", headers={**api.ann, "X-Request-ID": odd})
        assert response.status_code == 200
        assert response.headers["x-request-id"] != odd and len(response.headers["x-request-id"]) == 32
    response = await api.client.get("/v1/me", headers=api.ann)
    assert len(response.headers["x-request-id"]) == 32


async def test_a_case_history_is_refused_as_not_found_to_a_stranger_and_that_is_recorded(api: Api) -> None:
    created = await api.client.post("/v1/cases", json={"title": "Doe family"}, headers=api.boss)
    case_id = created.json()["id"]
    stranger = auth(api.container, role=Role.CASEWORKER, name="Bob")
    refused = await api.client.get(f"/v1/cases/{case_id}/history", headers=stranger)
    assert refused.status_code == 404
    seen = await api.client.get(f"/v1/cases/{case_id}/history", headers=api.boss)
    assert seen.status_code == 200
    entries = await api.entries(case_id=case_id, resource_type="case_history")
    assert {(e["actor_name"], e["outcome"]) for e in entries} == {("Bob", "denied"), ("Sue", "allowed")}


async def test_an_idempotent_replay_is_recorded_as_a_replay(api: Api) -> None:
    key = {"Idempotency-Key": str(uuid.uuid4())}
    first = await api.client.post("/v1/cases", json={"title": "Doe family"}, headers={**api.ann, **key})
    again = await api.client.post(
        "/v1/cases", json={"title": "Doe family"}, headers={**api.ann, **key, "X-Request-ID": "the-retry"}
    )
    assert first.status_code == again.status_code == 201 and again.headers["idempotent-replayed"] == "true"
    [replay] = [e for e in await api.entries(action="replay") if e["request_id"] == "the-retry"]
    assert (replay["resource_type"], replay["resource_id"], replay["actor_name"]) == (
        "request",
        "POST /v1/cases",
        "Ann",
    )


async def test_the_trail_pages_with_a_cursor_and_a_link(api: Api) -> None:
    for n in range(3):
        await api.client.get("/v1/audit", headers={**api.boss, "X-Request-ID": f"page-{n}"})
    page = await api.client.get("/v1/audit", params={"limit": "2"}, headers=api.boss)
    body = page.json()
    assert len(body["items"]) == 2 and body["next_cursor"]
    assert page.headers["link"].endswith('; rel="next"') and "cursor=" in page.headers["link"]
    link = page.headers["link"].split(">")[0].lstrip("<")
    following = await api.client.get(link, headers=api.boss)
    assert following.status_code == 200
    assert not {e["id"] for e in following.json()["items"]} & {e["id"] for e in body["items"]}
    tampered = await api.client.get("/v1/audit", params={"cursor": "bm90LW91cnM"}, headers=api.boss)
    assert tampered.status_code in (400, 422)


async def test_a_resource_type_the_database_cannot_hold_is_refused_naming_the_parameter(api: Api) -> None:
    """A NUL character made PostgreSQL refuse the query, answered as 422 ``invalid-data``,
    which blames a stored value and names no parameter."""
    response = await api.client.get("/v1/audit", params={"resource_type": "case\x00"}, headers=api.boss)
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["type"].endswith("/invalid-input") and "resource_type" in problem["detail"]
    assert await api.entries(resource_type="case") == []  # the filter still filters


async def test_a_limit_out_of_range_is_refused_naming_it(api: Api) -> None:
    for path in ("/v1/audit", f"/v1/cases/{uuid.uuid4()}/history"):
        response = await api.client.get(path, params={"limit": "0"}, headers=api.boss)
        assert response.status_code == 422, response.text
        assert [error["pointer"] for error in response.json()["errors"]] == ["limit"], response.text
