"""Partner URLs httpx cannot request, over real HTTP on the memory adapters and on real
PostgreSQL: registering one is the ``invalid-partner`` 422 any other bad URL gets (it was a 500,
or a partner that 500ed every later read), and a partner stored with one before shows as a failing
partner (a degraded preview, a 502 ``upstream``) whose send jobs fail at once, instead of 500s
and jobs left ``in_flight`` to be sent again every time their lease runs out. A partner stored
with a user name and password in its URLs shows them to no one."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from craig.domain.access import Role
from craig.domain.partners import Partner
from craig.entrypoints.container import Container
from tests.support.apps import auth, serving
from tests.support.exchange_data import a_partner, drain_send_jobs, staged_events
from tests.support.fake_partner import registration
from tests.support.problems import problem_code

pytestmark = pytest.mark.integration

#: What the auditor reported: a 500 at registration, then 500s on every read of the partner.
UNUSABLE_URLS = ["https://[::1", "https://\u2603.example", "https://xn--a.example"]


@attrs.define
class Api:
    container: Container
    client: httpx.AsyncClient
    admin: dict[str, str]
    worker: dict[str, str]

    async def stored(self, base_url: str) -> Partner:
        """A partner written behind the registration rules, as one registered before them."""
        partner = attrs.evolve(a_partner(), base_url=base_url, token_url=f"{base_url}/oauth/token")
        uow = self.container.uow()
        async with uow:
            assert await uow.partners.add(partner)
            await uow.commit()
        return partner

    async def drain(self) -> None:
        await drain_send_jobs(self.container)

    async def events(self, kind: str) -> Counter[str]:
        return await staged_events(self.container, kind)


@pytest.fixture(params=["memory", "postgres"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    async with serving(request.param, tmp_path, pg_url) as (container, client):
        try:
            yield Api(container, client, auth(container, role=Role.ADMIN), auth(container, role=Role.CASEWORKER))
        finally:
            await container.partner_gateway().aclose()


async def test_registering_a_url_httpx_cannot_request_is_the_invalid_partner_422(api: Api) -> None:
    def body(field: str, url: str) -> dict[str, Any]:
        return {**registration("https://partner.example", f"P {uuid.uuid4().hex[:8]}"), field: url}

    usual = await api.client.post("/v1/exchange/partners", json=body("base_url", "ftp://x"), headers=api.admin)
    assert usual.status_code == 422 and problem_code(usual.json()) == "invalid-partner"
    for field in ("base_url", "token_url"):
        for url in UNUSABLE_URLS:
            refused = await api.client.post("/v1/exchange/partners", json=body(field, url), headers=api.admin)
            assert refused.status_code == 422, (field, url, refused.text)
            assert refused.headers["content-type"] == usual.headers["content-type"]
            assert problem_code(refused.json()) == "invalid-partner"
            assert refused.json()["detail"].startswith(field)
    listed = await api.client.get("/v1/exchange/partners?per_page=50", headers=api.worker)
    assert listed.status_code == 200 and listed.json()["total"] == 0


async def test_a_stored_partner_with_such_a_url_reads_as_a_failing_partner_not_a_500(api: Api) -> None:
    for url in UNUSABLE_URLS:
        partner = await api.stored(url)
        shown = await api.client.get(f"/v1/exchange/partners/{partner.id}", headers=api.worker)
        assert shown.status_code == 200, (url, shown.text)
        assert shown.json()["partner"]["base_url"] == url and shown.json()["recent_records"]["items"] == []
        [reason] = shown.json()["degraded"]
        assert "/records" in reason and "unusable URL" in reason
        records = await api.client.get(f"/v1/exchange/partners/{partner.id}/records", headers=api.worker)
        assert records.status_code == 502, (url, records.text)
        assert problem_code(records.json()) == "upstream" and records.json()["upstream_path"] == "/records"
    listed = await api.client.get("/v1/exchange/partners?per_page=50", headers=api.worker)
    assert listed.status_code == 200 and listed.json()["total"] == len(UNUSABLE_URLS)


async def test_its_send_jobs_fail_at_once_instead_of_staying_in_flight(api: Api) -> None:
    partners = [await api.stored(url) for url in UNUSABLE_URLS]
    body = {"partner_ids": [str(p.id) for p in partners], "payload": {"case": "c-1"}}
    created = await api.client.post("/v1/exchange/transactions", json=body, headers=api.worker)
    assert created.status_code == 202, created.text
    await api.drain()
    shown = await api.client.get(f"/v1/exchange/transactions/{created.json()['id']}", headers=api.worker)
    jobs = shown.json()["jobs"]
    assert [(j["status"], j["attempts"]) for j in jobs] == [("failed", 1)] * len(UNUSABLE_URLS), jobs
    assert all(j["last_error"].startswith("the partner's URLs are unusable: base_url") for j in jobs), jobs
    assert await api.events("exchange.send_failed") == Counter({j["id"]: 1 for j in jobs})


async def test_a_stored_partner_with_credentials_in_its_urls_shows_them_to_no_one(api: Api) -> None:
    """Partners are listed to everyone signed in; registration refuses credentials in a URL, and
    one stored before that shows them masked, in every view."""
    partner = await api.stored("http://clerk:s3cret-pw@127.0.0.1:9")
    shown = "http://***@127.0.0.1:9"
    detail = await api.client.get(f"/v1/exchange/partners/{partner.id}", headers=api.worker)
    assert detail.json()["degraded"] and "s3cret" not in detail.text  # nor in why its records were not read
    views = [
        detail.json()["partner"],
        *(await api.client.get("/v1/exchange/partners", headers=api.worker)).json()["items"],
        *(await api.client.get("/v1/exchange/partners?per_page=50", headers=api.worker)).json()["items"],
    ]
    assert len(views) == 3
    for view in views:
        assert view["base_url"] == shown and view["token_url"] == f"{shown}/oauth/token", view
        assert "s3cret" not in str(view) and "clerk" not in str(view)
