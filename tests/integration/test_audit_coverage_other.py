"""Every route of placements, foster homes, referrals, intake, rule sets and partner exchange
records its audit entry, allowed and denied: driven over real HTTP on real PostgreSQL, then the
``audit_entries`` table is read and each request's entries are compared exactly.

Each request carries its own ``X-Request-ID``; an entry records it, so the entries of one
request are found by it (and only one is expected)."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from dependency_injector import providers

from craig.domain.access import Role
from craig.entrypoints.container import Container
from craig.entrypoints.settings import IntakeSettings
from craig.entrypoints.workers.send_jobs import send_job_scheduler
from tests.support.apps import auth, serving
from tests.support.audit import superuser
from tests.support.fake_partner import FakePartner, registration, serving_partner

pytestmark = pytest.mark.integration

_numbers = itertools.count(1)


@attrs.frozen
class Person:
    sub: uuid.UUID
    role: str
    name: str
    headers: dict[str, str]


def _row(record: Any) -> dict[str, Any]:
    row = dict(record)
    row["resource_ids"] = list(row["resource_ids"])
    row["changed_fields"] = list(row["changed_fields"])
    return row


@attrs.define
class Api:
    container: Container
    client: httpx.AsyncClient
    pg_url: str
    supervisor: Person
    worker: Person
    stranger: Person
    screener: Person
    last_request: str = ""

    def person(self, role: Role, name: str) -> Person:
        sub = uuid.uuid4()
        return Person(sub, role.value, name, auth(self.container, role=role, sub=sub, name=name))

    async def call(self, method: str, path: str, who: Person | None, **kw: Any) -> httpx.Response:
        """One request with a fresh request id (kept in ``last_request``)."""
        self.last_request = f"audit-other-{next(_numbers)}"
        headers = {**(who.headers if who else {}), **kw.pop("headers", {}), "X-Request-ID": self.last_request}
        return await self.client.request(method, path, headers=headers, **kw)

    async def entries(self, request_id: str | None = None) -> list[dict[str, Any]]:
        """The entries the request wrote, as stored in the table."""
        conn = await superuser(self.pg_url)
        try:
            rows = await conn.fetch(
                "SELECT actor, actor_role, actor_name, action, resource_type, resource_id, resource_ids,"
                " case_id, outcome, changed_fields, client_ip FROM audit_entries WHERE request_id = $1",
                request_id or self.last_request,
            )
        finally:
            await conn.close()
        return [_row(r) for r in rows]

    async def only_entry(self) -> dict[str, Any]:
        found = await self.entries()
        assert len(found) == 1, found
        return found[0]


def expected(
    who: Person,
    action: str,
    resource_type: str,
    resource_id: object = None,
    *,
    outcome: str = "allowed",
    case_id: object = None,
    resource_ids: list[object] | None = None,
    changed_fields: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "actor": who.sub,
        "actor_role": who.role,
        "actor_name": who.name,
        "action": action,
        "resource_type": resource_type,
        "resource_id": None if resource_id is None else str(resource_id),
        "resource_ids": [str(i) for i in resource_ids or []],
        "case_id": None if case_id is None else uuid.UUID(str(case_id)),
        "outcome": outcome,
        "changed_fields": changed_fields or [],
        "client_ip": "127.0.0.1",
    }


async def _api(container: Container, client: httpx.AsyncClient, pg_url: str) -> Api:
    api = Api(container, client, pg_url, *(Person(uuid.uuid4(), "", "", {}) for _ in range(4)))
    api.supervisor = api.person(Role.SUPERVISOR, "Sue")
    api.worker = api.person(Role.CASEWORKER, "Wes")
    api.stranger = api.person(Role.CASEWORKER, "Stan")
    api.screener = api.person(Role.SCREENER, "Sam")
    return api


@pytest.fixture
async def api(tmp_path: Path, pg_url: str) -> AsyncIterator[Api]:
    async with serving("postgres", tmp_path, pg_url) as (container, client):
        yield await _api(container, client, pg_url)


async def _case(api: Api) -> str:
    created = await api.client.post("/v1/cases", json={"title": "Doe family"}, headers=api.worker.headers)
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


# --- foster homes --------------------------------------------------------------------------------


async def test_foster_home_routes_record_their_entries(api: Api) -> None:
    sue, wes = api.supervisor, api.worker
    created = await api.call("POST", "/v1/foster-homes", sue, json={"name": "Oak", "capacity": 2})
    assert created.status_code == 201, created.text
    home_id = created.json()["id"]
    assert await api.entries() == [expected(sue, "create", "foster_home", home_id)]

    refused = await api.call("POST", "/v1/foster-homes", wes, json={"name": "Elm", "capacity": 1})
    assert refused.status_code == 403
    assert await api.entries() == [expected(wes, "create", "foster_home", outcome="denied")]

    read = await api.call("GET", f"/v1/foster-homes/{home_id}", wes)
    assert read.status_code == 200
    assert await api.entries() == [expected(wes, "read", "foster_home", home_id)]
    etag = read.headers["etag"]

    unknown = uuid.uuid4()
    missing = await api.call("GET", f"/v1/foster-homes/{unknown}", wes)
    assert missing.status_code == 404
    assert await api.entries() == [expected(wes, "read", "foster_home", unknown, outcome="denied")]

    listed = await api.call("GET", "/v1/foster-homes", wes)
    assert listed.status_code == 200 and [h["id"] for h in listed.json()["items"]] == [home_id]
    assert await api.entries() == [expected(wes, "list", "foster_home", resource_ids=[home_id])]
    legacy = await api.call("GET", "/v1/foster-homes", wes, params={"page": "1", "per_page": "10"})
    assert legacy.status_code == 200 and legacy.json()["total"] == 1
    assert await api.entries() == [expected(wes, "list", "foster_home", resource_ids=[home_id])]

    change = {"name": "Oak Lodge", "capacity": 3}
    refused = await api.call("PATCH", f"/v1/foster-homes/{home_id}", wes, json=change, headers={"If-Match": etag})
    assert refused.status_code == 403
    assert await api.entries() == [expected(wes, "update", "foster_home", home_id, outcome="denied")]
    changed = await api.call("PATCH", f"/v1/foster-homes/{home_id}", sue, json=change, headers={"If-Match": etag})
    assert changed.status_code == 200, changed.text
    assert await api.entries() == [expected(sue, "update", "foster_home", home_id, changed_fields=["capacity", "name"])]
    missing = await api.call("PATCH", f"/v1/foster-homes/{unknown}", sue, json=change, headers={"If-Match": etag})
    assert missing.status_code == 404
    assert await api.entries() == [expected(sue, "update", "foster_home", unknown, outcome="denied")]
    # no value of what changed is ever kept
    assert "Oak Lodge" not in repr(await api.entries(changed.headers["x-request-id"]))


# --- placements and placement histories ----------------------------------------------------------


async def test_placement_routes_and_histories_record_their_entries(api: Api) -> None:
    sue, wes, stan = api.supervisor, api.worker, api.stranger
    home_id = (
        await api.client.post("/v1/foster-homes", json={"name": "Oak", "capacity": 2}, headers=sue.headers)
    ).json()["id"]
    case_id = await _case(api)
    body = {"case_id": case_id, "foster_home_id": home_id, "status": "planned", "start_date": "2026-03-01"}

    hidden = await api.call("POST", "/v1/placements", stan, json=body)
    assert hidden.status_code == 404
    assert await api.entries() == [expected(stan, "create", "placement", case_id=case_id, outcome="denied")]

    created = await api.call("POST", "/v1/placements", wes, json=body)
    assert created.status_code == 201, created.text
    placement_id = created.json()["id"]
    assert await api.entries() == [expected(wes, "create", "placement", placement_id, case_id=case_id)]

    read = await api.call("GET", f"/v1/placements/{placement_id}", wes)
    assert read.status_code == 200
    assert await api.entries() == [expected(wes, "read", "placement", placement_id, case_id=case_id)]
    hidden = await api.call("GET", f"/v1/placements/{placement_id}", stan)
    assert hidden.status_code == 404
    assert await api.entries() == [expected(stan, "read", "placement", placement_id, outcome="denied")]

    activated = await api.call("PATCH", f"/v1/placements/{placement_id}", wes, json={"status": "active"})
    assert activated.status_code == 200, activated.text
    assert await api.entries() == [
        expected(wes, "update", "placement", placement_id, case_id=case_id, changed_fields=["status"])
    ]
    hidden = await api.call("PATCH", f"/v1/placements/{placement_id}", stan, json={"status": "cancelled"})
    assert hidden.status_code == 404
    assert await api.entries() == [expected(stan, "update", "placement", placement_id, outcome="denied")]
    ended = await api.call(
        "PATCH", f"/v1/placements/{placement_id}", wes, json={"status": "ended", "end_reason": "reunified"}
    )
    assert ended.status_code == 200, ended.text
    assert await api.entries() == [
        expected(
            wes,
            "update",
            "placement",
            placement_id,
            case_id=case_id,
            changed_fields=["end_reason", "ended_at", "status"],
        )
    ]

    history = await api.call("GET", f"/v1/cases/{case_id}/placements", wes)
    assert history.status_code == 200 and [p["id"] for p in history.json()["items"]] == [placement_id]
    assert await api.entries() == [expected(wes, "list", "placement", case_id=case_id, resource_ids=[placement_id])]
    hidden = await api.call("GET", f"/v1/cases/{case_id}/placements", stan)
    assert hidden.status_code == 404
    assert await api.entries() == [expected(stan, "list", "placement", case_id=case_id, outcome="denied")]

    home_history = await api.call("GET", f"/v1/foster-homes/{home_id}/placements", sue)
    assert home_history.status_code == 200 and [p["id"] for p in home_history.json()["items"]] == [placement_id]
    assert await api.entries() == [expected(sue, "list", "placement", home_id, resource_ids=[placement_id])]
    # a case worker who may not see the case is served the history without it, and that is what is recorded
    filtered = await api.call("GET", f"/v1/foster-homes/{home_id}/placements", stan)
    assert filtered.status_code == 200 and filtered.json()["items"] == []
    assert await api.entries() == [expected(stan, "list", "placement", home_id)]
    unknown = uuid.uuid4()
    missing = await api.call("GET", f"/v1/foster-homes/{unknown}/placements", sue)
    assert missing.status_code == 404
    assert await api.entries() == [expected(sue, "list", "placement", unknown, outcome="denied")]


async def test_a_refused_write_commits_nothing_of_its_own_and_a_conflict_no_entry(api: Api) -> None:
    """A 409 is neither allowed nor a denial: the write rolled back, and its entry with it."""
    sue, wes = api.supervisor, api.worker
    home = await api.client.post("/v1/foster-homes", json={"name": "Oak", "capacity": 1}, headers=sue.headers)
    home_id = home.json()["id"]
    first = {"case_id": await _case(api), "foster_home_id": home_id, "status": "active", "start_date": "2026-03-01"}
    assert (await api.client.post("/v1/placements", json=first, headers=wes.headers)).status_code == 201
    second = {**first, "case_id": await _case(api)}
    full = await api.call("POST", "/v1/placements", wes, json=second)
    assert full.status_code == 409
    assert await api.entries() == []


# --- intake and the referral queue ---------------------------------------------------------------

FORM: dict[str, Any] = {
    "reporter": {"name": "Olive Neighbour", "email": "olive@example.net"},
    "child": {"first_name": "Rosalind", "age": 2},
    "concern": "Rosalind was left alone in the flat all night",
}


def anonymous(action: str, resource_id: object = None, outcome: str = "allowed") -> dict[str, Any]:
    return {
        "actor": None,
        "actor_role": "anonymous",
        "actor_name": None,
        "action": action,
        "resource_type": "referral",
        "resource_id": None if resource_id is None else str(resource_id),
        "resource_ids": [],
        "case_id": None,
        "outcome": outcome,
        "changed_fields": [],
        "client_ip": "127.0.0.1",
    }


async def test_intake_and_the_referral_queue_record_their_entries(api: Api) -> None:
    sam, wes = api.screener, api.worker
    submitted = await api.call("POST", "/intake/referrals", None, json=FORM)
    assert submitted.status_code == 202, submitted.text
    referral_id = submitted.json()["id"]
    [entry] = await api.entries()
    assert entry == anonymous("create", referral_id)
    assert not any(secret in repr(entry) for secret in ("Olive", "Rosalind", "alone"))

    queue = await api.call("GET", "/v1/referrals", sam)
    assert queue.status_code == 200 and [r["id"] for r in queue.json()["items"]] == [referral_id]
    assert await api.entries() == [expected(sam, "list", "referral", resource_ids=[referral_id])]
    refused = await api.call("GET", "/v1/referrals", wes)
    assert refused.status_code == 403
    assert await api.entries() == [expected(wes, "list", "referral", outcome="denied")]

    read = await api.call("GET", f"/v1/referrals/{referral_id}", sam)
    assert read.status_code == 200
    assert await api.entries() == [expected(sam, "read", "referral", referral_id)]
    refused = await api.call("GET", f"/v1/referrals/{referral_id}", wes)
    assert refused.status_code == 403
    assert await api.entries() == [expected(wes, "read", "referral", referral_id, outcome="denied")]
    unknown = uuid.uuid4()
    missing = await api.call("GET", f"/v1/referrals/{unknown}", sam)
    assert missing.status_code == 404
    assert await api.entries() == [expected(sam, "read", "referral", unknown, outcome="denied")]

    screen_in = {"decision": "screen_in", "case": {"title": "Rosalind", "family_name": "Doe"}}
    if_match = {"If-Match": read.headers["etag"]}
    refused = await api.call("POST", f"/v1/referrals/{referral_id}/screening", wes, json=screen_in, headers=if_match)
    assert refused.status_code == 403
    assert await api.entries() == [expected(wes, "screen", "referral", referral_id, outcome="denied")]
    screened = await api.call("POST", f"/v1/referrals/{referral_id}/screening", sam, json=screen_in, headers=if_match)
    assert screened.status_code == 201, screened.text
    case_id = screened.headers["location"].rsplit("/", 1)[1]
    assert await api.entries() == [expected(sam, "screen", "referral", referral_id, case_id=case_id)]
    # the screening shows in the new case's history
    history = await api.client.get(f"/v1/cases/{case_id}/history", headers=api.supervisor.headers)
    assert history.status_code == 200, history.text
    assert [(e["action"], e["resource_id"]) for e in history.json()["items"]] == [("screen", referral_id)]


class RejectingCaptcha:
    async def verify(self, token: str, client_ip: str | None) -> bool:
        return False


async def test_a_rejected_captcha_is_recorded_as_a_denied_anonymous_entry(tmp_path: Path, pg_url: str) -> None:
    intake = IntakeSettings(require_captcha=True, captcha_secret="secret", captcha_verify_url="http://127.0.0.1:9/")
    async with serving("postgres", tmp_path, pg_url, intake=intake) as (container, client):
        container.captcha.override(providers.Object(RejectingCaptcha()))
        api = await _api(container, client, pg_url)
        rejected = await api.call("POST", "/intake/referrals", None, json={**FORM, "captcha_token": "forged"})
        assert rejected.status_code == 403
        assert await api.entries() == [anonymous("create", outcome="denied")]


# --- rule sets -----------------------------------------------------------------------------------

RULES = [{"when": {"all": [{"fact": "age", "op": "lt", "value": 3}]}, "then": "urgent"}]


async def test_creating_a_rule_set_version_is_recorded_and_reads_are_not(api: Api) -> None:
    sue, wes = api.supervisor, api.worker
    refused = await api.call("POST", "/v1/rule-sets", wes, json={"name": "triage", "rules": RULES})
    assert refused.status_code == 403
    assert await api.entries() == [expected(wes, "rule_set_version", "rule_set", "triage", outcome="denied")]
    for version in (1, 2):
        created = await api.call("POST", "/v1/rule-sets", sue, json={"name": "triage", "rules": RULES})
        assert created.status_code == 201, created.text
        assert await api.entries() == [expected(sue, "rule_set_version", "rule_set", f"triage:{version}")]
    read = await api.call("GET", "/v1/rule-sets/triage", wes)
    assert read.status_code == 200 and await api.entries() == []


# --- partner exchange ----------------------------------------------------------------------------


@attrs.define
class Exchange:
    api: Api
    fake: FakePartner
    base: str

    async def drain(self) -> None:
        worker = send_job_scheduler(self.api.container)
        try:
            await worker.drain()
        finally:
            await worker.aclose()


@pytest.fixture
async def exchange(tmp_path: Path, pg_url: str) -> AsyncIterator[Exchange]:
    async with serving_partner() as (fake, base), serving("postgres", tmp_path, pg_url) as (container, client):
        try:
            yield Exchange(await _api(container, client, pg_url), fake, base)
        finally:
            await container.partner_gateway().aclose()


async def test_exchange_transactions_and_job_retries_record_their_entries(exchange: Exchange) -> None:
    api = exchange.api
    sue, wes, stan = api.supervisor, api.worker, api.stranger
    admin = api.person(Role.ADMIN, "Ada")
    refused_registration = await api.call(
        "POST", "/v1/exchange/partners", sue, json=registration(exchange.base, "County", rate_limit_rpm=6000)
    )
    assert refused_registration.status_code == 403
    assert await api.entries() == [expected(sue, "create", "partner", outcome="denied")]
    partner = await api.call(
        "POST", "/v1/exchange/partners", admin, json=registration(exchange.base, "County", rate_limit_rpm=6000)
    )
    assert partner.status_code == 201, partner.text
    assert await api.entries() == [expected(admin, "create", "partner", partner.json()["id"])]

    # A read of the partner's records (third-party data that may name a child) records their ids.
    exchange.fake.records = [{"id": f"r-{n}", "type": "referral"} for n in range(3)]
    partner_id = partner.json()["id"]
    records = await api.call("GET", f"/v1/exchange/partners/{partner_id}/records", wes, params={"per_page": "2"})
    assert records.status_code == 200, records.text
    assert await api.entries() == [expected(wes, "read", "partner_records", partner_id, resource_ids=["r-0", "r-1"])]
    shown = await api.call("GET", f"/v1/exchange/partners/{partner_id}", wes)
    assert shown.status_code == 200, shown.text
    assert await api.entries() == [
        expected(wes, "read", "partner_records", partner_id, resource_ids=["r-0", "r-1", "r-2"])
    ]
    exchange.fake.fail_each, exchange.fake.fail_status = 1, 422

    body = {"partner_ids": [partner.json()["id"]], "payload": {"case": "c-1"}}
    started = await api.call("POST", "/v1/exchange/transactions", wes, json=body)
    assert started.status_code == 202, started.text
    transaction_id = started.json()["id"]
    [job] = started.json()["jobs"]
    assert await api.entries() == [
        expected(wes, "create", "exchange_transaction", transaction_id, resource_ids=[job["id"]])
    ]

    read = await api.call("GET", f"/v1/exchange/transactions/{transaction_id}", wes)
    assert read.status_code == 200
    assert await api.entries() == [expected(wes, "read", "exchange_transaction", transaction_id)]
    hidden = await api.call("GET", f"/v1/exchange/transactions/{transaction_id}", stan)
    assert hidden.status_code == 404
    assert await api.entries() == [expected(stan, "read", "exchange_transaction", transaction_id, outcome="denied")]

    await exchange.drain()
    retry = f"/v1/exchange/jobs/{job['id']}/retry"
    refused = await api.call("POST", retry, wes)
    assert refused.status_code == 403
    assert await api.entries() == [expected(wes, "job_retry", "send_job", job["id"], outcome="denied")]
    retried = await api.call("POST", retry, sue)
    assert retried.status_code == 202, retried.text
    assert await api.entries() == [expected(sue, "job_retry", "send_job", job["id"])]
    again = await api.call("POST", retry, sue)
    assert again.status_code == 409 and await api.entries() == []
    unknown = uuid.uuid4()
    missing = await api.call("POST", f"/v1/exchange/jobs/{unknown}/retry", sue)
    assert missing.status_code == 404
    assert await api.entries() == [expected(sue, "job_retry", "send_job", unknown, outcome="denied")]


# --- a read whose entry cannot be written is not served -----------------------------------------


async def test_a_read_whose_entry_cannot_be_written_is_refused_and_a_write_rolls_back(api: Api) -> None:
    sue = api.supervisor
    home = await api.client.post("/v1/foster-homes", json={"name": "Oak", "capacity": 1}, headers=sue.headers)
    home_id = home.json()["id"]
    conn = await superuser(api.pg_url)
    try:
        await conn.execute(
            "CREATE FUNCTION audit_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            " RAISE EXCEPTION 'audit store down' USING ERRCODE = 'cannot_connect_now'; END $$"
        )
        await conn.execute(
            "CREATE TRIGGER audit_test_refuse BEFORE INSERT ON audit_entries"
            " FOR EACH ROW EXECUTE FUNCTION audit_test_refuse()"
        )
        read = await api.call("GET", f"/v1/foster-homes/{home_id}", sue)
        assert read.status_code == 503, read.text
        assert "Oak" not in read.text
        created = await api.call("POST", "/v1/foster-homes", sue, json={"name": "Elm", "capacity": 1})
        assert created.status_code == 503, created.text
        count = await conn.fetchval("SELECT count(*) FROM foster_homes WHERE name IS NOT NULL")
        assert count == 1
    finally:
        await conn.execute("DROP TRIGGER IF EXISTS audit_test_refuse ON audit_entries")
        await conn.execute("DROP FUNCTION IF EXISTS audit_test_refuse()")
        await conn.close()
