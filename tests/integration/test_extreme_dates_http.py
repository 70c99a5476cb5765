"""Extreme dates over real HTTP: a case's ``opened_at`` and a contact's ``occurred_at`` out of
range answer 422, so Python's ``datetime.max``/``datetime.min`` never reach PostgreSQL (which
stores them as ``infinity``/``-infinity`` and gives them back without a zone); rows stored that
way before the fix still answer with a zone, and lists page across them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from sqlalchemy import text

from craig.domain.access import Role
from craig.entrypoints.container import Container
from tests.support.apps import auth, serving
from tests.support.problems import problem_code

pytestmark = pytest.mark.integration

MAX, MIN = datetime.max.replace(tzinfo=UTC), datetime.min.replace(tzinfo=UTC)
INFINITY = "9999-12-31T23:59:59.999999Z"
MINUS_INFINITY = "0001-01-01T00:00:00Z"


@attrs.define
class Api:
    container: Container
    client: httpx.AsyncClient
    kind: str
    worker: dict[str, str]
    supervisor: dict[str, str]

    async def case(self, **body: Any) -> httpx.Response:
        return await self.client.post("/v1/cases", json={"title": "Doe family", **body}, headers=self.worker)

    async def contact(self, case_id: str, occurred_at: str) -> httpx.Response:
        body = {"contact_type": "home_visit", "occurred_at": occurred_at, "summary": "Saw both children."}
        return await self.client.post(f"/v1/cases/{case_id}/contacts", json=body, headers=self.worker)

    async def walk(self, path: str, query: str) -> list[str]:
        """Every id of a keyset list, one item a page, as a supervisor."""
        ids: list[str] = []
        cursor: str | None = None
        while True:
            url = f"{path}?{query}&limit=1" + (f"&cursor={cursor}" if cursor else "")
            response = await self.client.get(url, headers=self.supervisor)
            assert response.status_code == 200, response.text
            page = response.json()
            ids += [item["id"] for item in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                return ids
            assert len(ids) < 20, "the list does not end"


@asynccontextmanager
async def _serve(kind: str, tmp_path: Path, pg_url: str | None) -> AsyncIterator[Api]:
    async with serving(kind, tmp_path, pg_url) as (container, client):
        worker = auth(container, role=Role.CASEWORKER, name="Ann")
        yield Api(container, client, kind, worker, auth(container, role=Role.SUPERVISOR))


@pytest.fixture(params=["memory", "postgres"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    async with _serve(request.param, tmp_path, pg_url) as served:
        yield served


@pytest.fixture
async def pg_api(pg_url: str, tmp_path: Path) -> AsyncIterator[Api]:
    async with _serve("postgres", tmp_path, pg_url) as served:
        yield served


def refused(response: httpx.Response, field: str) -> None:
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert problem_code(body) == "invalid-input"
    assert [error["pointer"] for error in body["errors"]] == [f"/{field}"]


async def test_dates_out_of_range_are_refused(api: Api) -> None:
    for opened_at in (
        INFINITY,
        MINUS_INFINITY,
        "1899-12-31T23:59:59Z",
        "0001-01-01T00:00:00+01:00",
        "2999-01-01T00:00:00Z",
    ):
        refused(await api.case(opened_at=opened_at), "opened_at")
    first = await api.case(opened_at="1900-01-01T00:00:00Z")
    assert first.status_code == 201, first.text
    assert first.json()["opened_at"] == "1900-01-01T00:00:00Z"
    case_id = first.json()["id"]
    for occurred_at in (INFINITY, MINUS_INFINITY, "1899-12-31T23:59:59Z", "0001-01-01T00:00:00+01:00"):
        refused(await api.contact(case_id, occurred_at), "occurred_at")
    contact = await api.contact(case_id, "1900-01-01T00:00:00Z")
    assert contact.status_code == 201, contact.text
    assert contact.json()["occurred_at"] == "1900-01-01T00:00:00Z"
    listed = await api.client.get("/v1/cases?sort=opened_at", headers=api.supervisor)
    assert [case["id"] for case in listed.json()["items"]] == [case_id]


async def _store(api: Api, table: str, column: str, values: dict[str, datetime]) -> None:
    """Write ``datetime.max``/``min`` with a zone, as the API did before the fix: asyncpg stores
    them as ``infinity``/``-infinity``."""
    async with api.container.postgres().transaction() as conn:
        for ident, value in values.items():
            statement = text(f"UPDATE {table} SET {column} = :value WHERE id = :id RETURNING {column}::text")
            stored = (await conn.execute(statement, {"value": value, "id": ident})).scalar_one()
            assert stored == ("infinity" if value == MAX else "-infinity")


async def test_cases_and_contacts_stored_at_infinity_still_page(pg_api: Api) -> None:
    api = pg_api
    ids = []
    for _ in range(4):
        created = await api.case()
        assert created.status_code == 201, created.text
        ids.append(created.json()["id"])
    late, early = ids[1], ids[2]
    await _store(api, "cases", "opened_at", {late: MAX, early: MIN})

    newest_first = await api.walk("/v1/cases", "sort=-opened_at")
    assert newest_first == [late, ids[3], ids[0], early]
    assert await api.walk("/v1/cases", "sort=opened_at") == newest_first[::-1]
    assert await api.walk("/v1/cases", "opened_from=1900-01-01T00:00:00Z") == newest_first[:3]
    assert await api.walk("/v1/cases", "opened_to=2100-01-01T00:00:00Z") == newest_first[1:]

    got = await api.client.get(f"/v1/cases/{late}", headers=api.supervisor)
    assert got.status_code == 200 and got.json()["opened_at"] == INFINITY
    got = await api.client.get(f"/v1/cases/{early}", headers=api.supervisor)
    assert got.status_code == 200 and got.json()["opened_at"] == MINUS_INFINITY

    case_id = ids[0]
    contacts = []
    for hour in range(4):
        created = await api.contact(case_id, f"2026-01-05T1{hour}:00:00Z")
        assert created.status_code == 201, created.text
        contacts.append(created.json()["id"])
    await _store(api, "contacts", "occurred_at", {contacts[1]: MAX, contacts[2]: MIN})
    path = f"/v1/cases/{case_id}/contacts"
    assert await api.walk(path, "") == [contacts[1], contacts[3], contacts[0], contacts[2]]
    got = await api.client.get(f"{path}/{contacts[1]}", headers=api.supervisor)
    assert got.status_code == 200 and got.json()["occurred_at"] == INFINITY


#: Times with a zone whose UTC form lies beyond the dates Python and PostgreSQL's driver hold.
BEYOND_THE_END = "9999-12-31T23:59:59-14:00"  # the year 10000 in UTC
BEFORE_THE_START = "0001-01-01T00:00:00+14:00"  # the year 0 in UTC


async def test_filter_times_beyond_the_calendar_select_as_the_ends_of_time(api: Api) -> None:
    """A filter's time whose UTC form lies past the last (or before the first) date made the
    database refuse the query, answered as 422 ``invalid-data`` (which blames a stored value).
    It is read as the latest (earliest) instant there is: the list answers what that selects."""
    opened = await api.case()
    assert opened.status_code == 201, opened.text
    everything = [opened.json()["id"]]

    async def cases(query: str) -> list[str]:
        response = await api.client.get(f"/v1/cases?{query}", headers=api.supervisor)
        assert response.status_code == 200, (query, response.text)
        return [case["id"] for case in response.json()["items"]]

    async def audit(query: str) -> int:
        response = await api.client.get(f"/v1/audit?{query}", headers=api.supervisor)
        assert response.status_code == 200, (query, response.text)
        return len(response.json()["items"])

    quoted = {name: value.replace("+", "%2B") for name, value in (("end", BEYOND_THE_END), ("start", BEFORE_THE_START))}
    assert await cases(f"opened_from={quoted['end']}") == []
    assert await cases(f"opened_to={quoted['end']}") == everything
    assert await cases(f"opened_from={quoted['start']}") == everything
    assert await cases(f"opened_to={quoted['start']}") == []
    assert await audit(f"since={quoted['end']}") == 0
    assert await audit(f"until={quoted['start']}") == 0
    assert await audit(f"since={quoted['start']}&until={quoted['end']}") > 0
