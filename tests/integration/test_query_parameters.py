"""Every route refuses an unknown query parameter and a malformed value with a 400 problem
naming it; every list answers keyset pages, and the old lists still answer page/per_page."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar, get
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromQuery

from craig.domain.access import Role
from craig.entrypoints.http.app import create_app
from craig.entrypoints.http.query_guard import query_names, repeatable_names
from tests.support.apps import make_container, make_settings, serving
from tests.support.casework_api import CaseworkApi, problem_type

pytestmark = pytest.mark.integration


@pytest.fixture(params=["memory", "postgres"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[CaseworkApi]:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    async with serving(request.param, tmp_path, pg_url) as (container, client):
        yield CaseworkApi.of(container, client)


def test_the_guard_reads_each_route_s_declared_query_parameters(tmp_path: Path) -> None:
    app = create_app(make_container(make_settings("memory", tmp_path)), manage_runtime=False)
    declared = {
        (route.path, method): query_names(handler)
        for route in app.routes
        for handler in getattr(route, "route_handlers", [])
        if isinstance(handler, HTTPRouteHandler)
        for method in handler.http_methods
    }
    assert declared[("/v1/referrals", "GET")] == {"status", "priority", "overdue", "limit", "cursor"}
    assert declared[("/v1/cases/{case_id:uuid}", "PATCH")] == frozenset()  # If-Match is a header
    assert declared[("/v1/foster-homes", "GET")] == {"limit", "cursor", "page", "per_page"}


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/v1/cases?famly_name=Doe", None),
        ("GET", "/v1/referrals?sttus=new", None),
        ("GET", "/v1/foster-homes?pag=2", None),
        ("GET", "/v1/me?x=1", None),
        ("POST", "/v1/cases?dry_run=1", {"title": "t"}),
        ("GET", "/health/live?verbose=1", None),
        (
            "POST",
            "/intake/referrals?utm_source=x",
            {"reporter": {"name": "R"}, "child": {"first_name": "C"}, "concern": "c"},
        ),
    ],
)
async def test_an_unknown_query_parameter_is_a_400_naming_it(
    api: CaseworkApi, method: str, path: str, body: dict[str, Any] | None
) -> None:
    response = await api.client.request(method, path, json=body, headers=api.supervisor.headers)
    assert response.status_code == 400, response.text
    assert problem_type(response) == "unknown-parameter"
    assert response.json()["parameter"] == path.split("?")[1].split("=")[0]


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/v1/referrals?status=new&status=screened_in", "status"),
        ("/v1/cases?limit=1&limit=100", "limit"),
        ("/v1/foster-homes?cursor=a&limit=2&cursor=b", "cursor"),
    ],
)
async def test_a_parameter_given_twice_is_a_400_naming_it(api: CaseworkApi, path: str, name: str) -> None:
    """Which value would count is an accident of the parser: a filter given twice would answer
    for one of them, silently."""
    response = await api.client.get(path, headers=api.supervisor.headers)
    assert response.status_code == 400, response.text
    assert problem_type(response) == "invalid-parameter"
    assert response.json()["parameter"] == name and "once" in response.json()["detail"]


def test_only_a_parameter_that_takes_a_list_may_be_repeated(tmp_path: Path) -> None:
    @get("/probe", sync_to_thread=False)
    def probe(
        ids: FromQuery[list[str]], tags: FromQuery[list[str] | None] = None, limit: FromQuery[int | None] = None
    ) -> None: ...

    handler = Litestar([probe]).routes[0].route_handlers[0]
    assert (query_names(handler), repeatable_names(handler)) == ({"ids", "tags", "limit"}, {"ids", "tags"})
    # None of Craig's routes takes a list in its query today: every parameter is given once.
    app = create_app(make_container(make_settings("memory", tmp_path)), manage_runtime=False)
    handlers = [
        h for route in app.routes for h in getattr(route, "route_handlers", []) if isinstance(h, HTTPRouteHandler)
    ]
    assert all(repeatable_names(h) == frozenset() for h in handlers)


@pytest.mark.parametrize(
    "query", ["limit=abc", "limit=0", "opened_from=yesterday", "referral_id=7", "overdue=perhaps", "page=0&per_page=5"]
)
async def test_a_malformed_value_is_a_4xx_problem_naming_it(api: CaseworkApi, query: str) -> None:
    path = "/v1/referrals" if query.startswith("overdue") else "/v1/cases"
    response = await api.client.get(f"{path}?{query}", headers=api.supervisor.headers)
    assert response.status_code in (400, 422), response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert query.split("=")[0] in response.text


async def test_every_old_list_pages_by_keyset_and_still_by_page(api: CaseworkApi) -> None:
    sup = api.supervisor.headers
    admin = api.person(Role.ADMIN).headers
    case = await api.case(api.supervisor)
    contacts = f"/v1/cases/{case['id']}/contacts"
    for n in range(3):
        body = {"contact_type": "phone_call", "occurred_at": f"2026-01-0{n + 1}T10:00:00Z", "summary": f"call {n}"}
        assert (await api.client.post(contacts, json=body, headers=sup)).status_code == 201
        await api.home()
        await api.case(api.supervisor)
        body = {
            "name": f"partner-{n}",
            "base_url": "http://127.0.0.1:9",
            "token_url": "http://127.0.0.1:9/token",
            "client_id": "c",
            "client_secret": "s",
        }
        partner = await api.client.post("/v1/exchange/partners", json=body, headers=admin)
        assert partner.status_code == 201, partner.text
        rules = {"name": f"rules-{n}", "rules": [{"when": {"all": []}, "then": "low"}]}
        assert (await api.client.post("/v1/rule-sets", json=rules, headers=sup)).status_code == 201
    for path in (contacts, "/v1/foster-homes", "/v1/exchange/partners", "/v1/rule-sets", "/v1/cases"):
        everything = (await api.client.get(f"{path}?per_page=200", headers=sup)).json()
        assert {"page", "per_page", "total"} <= set(everything), path
        assert len(everything["items"]) >= 3, path
        seen: list[str] = []
        url = f"{path}?limit=2"
        while True:
            response = await api.client.get(url, headers=sup)
            assert response.status_code == 200, (path, response.text)
            page = response.json()
            assert set(page) == {"items", "next_cursor"}
            seen.extend(str(item.get("id") or item.get("name")) for item in page["items"])
            if page["next_cursor"] is None:
                assert "link" not in response.headers
                break
            url = response.headers["link"].split(">")[0][1:]
        assert seen == [str(item.get("id") or item.get("name")) for item in everything["items"]], path
        mixed = await api.client.get(f"{path}?page=1&limit=2", headers=sup)
        assert mixed.status_code == 400 and problem_type(mixed) == "invalid-parameter"
    assert uuid.UUID(case["id"])
