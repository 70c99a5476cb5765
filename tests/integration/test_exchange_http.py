"""Partner exchange over real HTTP, on the memory adapters and on real PostgreSQL, against the
fake partner (a real HTTP server on 127.0.0.1)."""

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
from craig.entrypoints.container import Container
from tests.support.apps import auth, serving
from tests.support.exchange_data import drain_send_jobs, staged_events
from tests.support.fake_partner import FakePartner, registration, serving_partner
from tests.support.problems import problem_code

pytestmark = pytest.mark.integration

PROBLEM = "application/problem+json"


@attrs.define
class Api:
    container: Container
    client: httpx.AsyncClient
    fake: FakePartner
    base: str
    admin: dict[str, str]
    supervisor: dict[str, str]
    worker: dict[str, str]

    async def partner(self, name: str = "County Health", **extra: Any) -> dict[str, Any]:
        extra.setdefault("rate_limit_rpm", 6000)  # the default 60/min would space reads 1 s apart
        response = await self.client.post(
            "/v1/exchange/partners", json=registration(self.base, name, **extra), headers=self.admin
        )
        assert response.status_code == 201, response.text
        return response.json()  # type: ignore[no-any-return]

    async def send(self, partner_ids: list[str], headers: dict[str, str] | None = None) -> httpx.Response:
        body = {"partner_ids": partner_ids, "payload": {"case": "c-1", "note": "placement update"}}
        return await self.client.post("/v1/exchange/transactions", json=body, headers=headers or self.worker)

    async def drain(self) -> None:
        await drain_send_jobs(self.container)

    async def events(self, kind: str) -> Counter[str]:
        return await staged_events(self.container, kind)


@pytest.fixture(params=["memory", "postgres"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    async with serving_partner() as (fake, base), serving(request.param, tmp_path, pg_url) as (container, client):
        try:
            yield Api(
                container,
                client,
                fake,
                base,
                auth(container, role=Role.ADMIN),
                auth(container, role=Role.SUPERVISOR),
                auth(container, role=Role.CASEWORKER),
            )
        finally:
            await container.partner_gateway().aclose()


async def test_an_admin_registers_a_partner_whose_secret_is_never_returned(api: Api) -> None:
    created = await api.partner(rate_limit_rpm=120)
    assert "client_secret" not in created
    assert created["rate_limit_rpm"] == 120 and created["effective_rate_limit_rpm"] == 120
    listed = await api.client.get("/v1/exchange/partners?per_page=50", headers=api.worker)
    assert listed.status_code == 200
    assert listed.json()["total"] == 1 and listed.json()["items"][0]["id"] == created["id"]
    assert "s3cret" not in listed.text
    default = await api.partner("Other Agency", rate_limit_rpm=None)
    assert default["rate_limit_rpm"] is None and default["effective_rate_limit_rpm"] == 60


async def test_partner_registration_problems(api: Api) -> None:
    body = registration(api.base, "Dup")
    for headers in (api.worker, api.supervisor):
        forbidden = await api.client.post("/v1/exchange/partners", json=body, headers=headers)
        assert forbidden.status_code == 403 and forbidden.headers["content-type"] == PROBLEM
    await api.partner("Dup")
    taken = await api.client.post("/v1/exchange/partners", json=body, headers=api.admin)
    assert taken.status_code == 409 and problem_code(taken.json()) == "partner-name-taken"
    bad_url = await api.client.post(
        "/v1/exchange/partners", json={**body, "name": "X", "base_url": "file:///etc"}, headers=api.admin
    )
    assert bad_url.status_code == 422 and problem_code(bad_url.json()) == "invalid-partner"
    missing = {k: v for k, v in body.items() if k != "client_secret"}
    assert (await api.client.post("/v1/exchange/partners", json=missing, headers=api.admin)).status_code == 400
    extra = {**body, "name": "Y", "surprise": 1}
    assert (await api.client.post("/v1/exchange/partners", json=extra, headers=api.admin)).status_code == 400


async def test_records_are_read_through_fetch_page(api: Api) -> None:
    api.fake.records = [{"id": str(i), "type": "placement", "data": {"n": i}} for i in range(7)]
    partner = await api.partner()
    url = f"/v1/exchange/partners/{partner['id']}/records"
    page = await api.client.get(url, params={"page": 2, "per_page": 3}, headers=api.worker)
    assert page.status_code == 200, page.text
    assert page.json() == {
        "items": [{"id": str(i), "type": "placement", "updated_at": None, "data": {"n": i}} for i in (3, 4, 5)],
        "page": 2,
        "per_page": 3,
        "total": 7,
    }
    bad_page = await api.client.get(url, params={"per_page": 0}, headers=api.worker)
    assert bad_page.status_code == 422
    unknown = await api.client.get(f"/v1/exchange/partners/{uuid.uuid4()}/records", headers=api.worker)
    assert unknown.status_code == 404


async def test_an_upstream_failure_is_a_502_naming_the_path(api: Api) -> None:
    partner = await api.partner()
    url = f"/v1/exchange/partners/{partner['id']}/records"
    api.fake.records_status = 503
    down = await api.client.get(url, headers=api.worker)
    assert down.status_code == 502 and down.headers["content-type"] == PROBLEM
    assert problem_code(down.json()) == "upstream" and down.json()["upstream_path"] == "/records"
    assert "/records" in down.json()["detail"]
    api.fake.records_status, api.fake.records_body = 200, {"items": "nope", "page": 1}
    wrong = await api.client.get(url, headers=api.worker)
    assert wrong.status_code == 502 and problem_code(wrong.json()) == "upstream_deserialize"


async def test_the_partner_view_degrades_instead_of_showing_no_data(api: Api) -> None:
    api.fake.records = [{"id": "r1", "type": "case"}]
    partner = await api.partner()
    url = f"/v1/exchange/partners/{partner['id']}"
    healthy = await api.client.get(url, headers=api.worker)
    assert healthy.status_code == 200 and healthy.json()["degraded"] == []
    assert [r["id"] for r in healthy.json()["recent_records"]["items"]] == ["r1"]
    api.fake.records_status = 500
    degraded = await api.client.get(url, headers=api.worker)
    assert degraded.status_code == 200
    assert degraded.json()["recent_records"]["items"] == [] and degraded.json()["partner"]["id"] == partner["id"]
    [reason] = degraded.json()["degraded"]
    assert "/records" in reason and "500" in reason


async def test_a_transaction_makes_one_job_per_partner_and_the_worker_sends_them(api: Api) -> None:
    a, b = await api.partner("A"), await api.partner("B")
    response = await api.send([a["id"], b["id"]])
    assert response.status_code == 202, response.text
    body = response.json()
    assert response.headers["location"] == f"/v1/exchange/transactions/{body['id']}"
    assert [j["partner_id"] for j in body["jobs"]] == [a["id"], b["id"]]
    assert all(j["status"] == "pending" for j in body["jobs"])
    assert len({j["correlation_id"] for j in body["jobs"]}) == 2
    await api.drain()
    shown = (await api.client.get(f"/v1/exchange/transactions/{body['id']}", headers=api.worker)).json()
    assert [j["status"] for j in shown["jobs"]] == ["sent", "sent"]
    assert all(j["attempts"] == 1 and j["last_error"] is None and j["completed_at"] for j in shown["jobs"])
    assert set(api.fake.delivered) == {j["correlation_id"] for j in body["jobs"]}
    assert await api.events("exchange.sent") == Counter({j["id"]: 1 for j in body["jobs"]})


async def test_transaction_problems_and_visibility(api: Api) -> None:
    partner = await api.partner()
    unknown = uuid.uuid4()
    missing = await api.send([partner["id"], str(unknown)])
    assert missing.status_code == 422 and missing.json()["unknown_partner_ids"] == [str(unknown)]
    assert (await api.send([])).status_code == 422
    assert (await api.send([partner["id"], partner["id"]])).status_code == 422
    created = (await api.send([partner["id"]])).json()
    url = f"/v1/exchange/transactions/{created['id']}"
    assert (await api.client.get(url, headers=auth(api.container, role=Role.CASEWORKER))).status_code == 404
    assert (await api.client.get(url, headers=api.supervisor)).status_code == 200
    assert (await api.client.get(f"/v1/exchange/transactions/{uuid.uuid4()}", headers=api.worker)).status_code == 404


async def test_a_replayed_request_does_not_create_a_second_transaction(api: Api) -> None:
    partner = await api.partner()
    headers = {**api.worker, "Idempotency-Key": "tx-once"}
    first, second = await api.send([partner["id"]], headers), await api.send([partner["id"]], headers)
    assert first.status_code == second.status_code == 202
    assert first.json() == second.json() and second.headers["idempotent-replayed"] == "true"
    await api.drain()
    assert sum(api.fake.delivered.values()) == 1


async def test_a_rejected_job_fails_at_once_and_a_supervisor_requeues_it(api: Api) -> None:
    partner = await api.partner()
    api.fake.fail_each, api.fake.fail_status = 1, 422
    [job] = (await api.send([partner["id"]])).json()["jobs"]
    await api.drain()
    retry_url = f"/v1/exchange/jobs/{job['id']}/retry"
    assert await api.events("exchange.send_failed") == Counter({job["id"]: 1})
    assert (await api.client.post(retry_url, headers=api.worker)).status_code == 403
    retried = await api.client.post(retry_url, headers=api.supervisor)
    assert retried.status_code == 202, retried.text
    assert retried.json()["status"] == "pending" and retried.json()["attempts"] == 0
    assert retried.json()["last_error"].startswith("partner answered 422")
    again = await api.client.post(retry_url, headers=api.supervisor)
    assert again.status_code == 409 and problem_code(again.json()) == "invalid-job-transition"
    unknown = await api.client.post(f"/v1/exchange/jobs/{uuid.uuid4()}/retry", headers=api.supervisor)
    assert unknown.status_code == 404
    await api.drain()
    assert api.fake.delivered[job["correlation_id"]] == 1
