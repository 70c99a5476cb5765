"""Every route of cases, contacts, attachments and a case's lifecycle records its audit entry:
the allowed call and the refused one (another case worker's 404, a role's 403), over real HTTP,
on the memory adapters and on real PostgreSQL. And an entry that cannot be written takes the
action with it: a write commits nothing, a read is not served (503)."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import asyncpg
import attrs
import httpx
import pytest

from craig.adapters.memory.audit import MemoryAuditRepository
from craig.adapters.postgres.database import libpq_dsn
from craig.domain.access import Role
from craig.domain.audit import AuditEntry, AuditOutcome
from craig.domain.audit_query import AuditFilter
from craig.entrypoints.container import Container
from craig.ports.errors import DatabaseUnavailable, ObjectStoreUnavailable
from tests.support.apps import auth, serving
from tests.support.files import png_bytes

pytestmark = pytest.mark.integration

PNG = png_bytes()
CONTACT_BODY = {"contact_type": "home_visit", "occurred_at": "2026-01-05T10:00:00+01:00", "summary": "Saw both."}
#: Requests whose X-Request-ID starts with this cannot write their audit entry (see `failing_audit`).
FAILS = "audit-fails-"
_numbers = itertools.count(1)


@attrs.define
class Person:
    sub: uuid.UUID
    name: str
    headers: dict[str, str]


@attrs.define
class Api:
    container: Container
    client: httpx.AsyncClient
    ann: Person  # a case worker, who opens the cases
    bob: Person  # another case worker, who may not see them
    sue: Person  # a supervisor

    async def call(
        self, method: str, path: str, who: Person, *, rid: str | None = None, **kw: Any
    ) -> tuple[httpx.Response, str]:
        """The response, and the X-Request-ID it was sent with."""
        rid = rid or f"req-{next(_numbers)}-{uuid.uuid4().hex[:8]}"
        headers = {**who.headers, "X-Request-ID": rid, **kw.pop("headers", {})}
        response = await self.client.request(method, path, headers=headers, **kw)
        assert response.headers["x-request-id"] == rid
        return response, rid

    async def entries(self, where: AuditFilter | None = None) -> list[AuditEntry]:
        uow = self.container.uow()
        async with uow:
            return list((await uow.audit.list(where or AuditFilter(), 1000)).items)

    async def entry_of(self, rid: str) -> AuditEntry:
        """The one entry the request recorded."""
        found = [e for e in await self.entries() if e.request_id == rid]
        assert len(found) == 1, found
        return found[0]

    async def case(self) -> dict[str, Any]:
        response, _ = await self.call("POST", "/v1/cases", self.ann, json={"title": "Doe family"})
        assert response.status_code == 201, response.text
        return response.json()  # type: ignore[no-any-return]

    async def contact(self, case_id: str) -> dict[str, Any]:
        response, _ = await self.call("POST", f"/v1/cases/{case_id}/contacts", self.ann, json=CONTACT_BODY)
        assert response.status_code == 201, response.text
        return response.json()  # type: ignore[no-any-return]


def person(container: Container, role: Role, name: str) -> Person:
    sub = uuid.uuid4()
    return Person(sub, name, auth(container, role=role, sub=sub, name=name))


@pytest.fixture(params=["memory", "postgres"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    async with serving(request.param, tmp_path, pg_url) as (container, client):
        yield Api(
            container,
            client,
            person(container, Role.CASEWORKER, "Ann"),
            person(container, Role.CASEWORKER, "Bob"),
            person(container, Role.SUPERVISOR, "Sue"),
        )


def expect(
    entry: AuditEntry,
    who: Person,
    action: str,
    resource_type: str,
    resource_id: object = None,
    *,
    case_id: object = None,
    outcome: AuditOutcome = AuditOutcome.ALLOWED,
    resource_ids: Sequence[object] = (),
    changed_fields: Sequence[str] = (),
) -> None:
    got = (
        entry.action.value,
        entry.resource_type,
        entry.resource_id,
        None if entry.case_id is None else str(entry.case_id),
        entry.outcome,
        entry.resource_ids,
        entry.changed_fields,
        entry.actor,
        entry.actor_name,
    )
    wanted = (
        action,
        resource_type,
        None if resource_id is None else str(resource_id),
        None if case_id is None else str(case_id),
        outcome,
        tuple(str(i) for i in resource_ids),
        tuple(changed_fields),
        who.sub,
        who.name,
    )
    assert got == wanted


DENIED = AuditOutcome.DENIED


async def test_a_case_read_listed_searched_changed_closed_and_reopened_is_recorded(api: Api) -> None:
    created, rid = await api.call("POST", "/v1/cases", api.ann, json={"title": "Doe family", "family_name": "Doe"})
    assert created.status_code == 201
    case_id = created.json()["id"]
    case = f"/v1/cases/{case_id}"
    expect(await api.entry_of(rid), api.ann, "create", "case", case_id, case_id=case_id)

    read, rid = await api.call("GET", case, api.ann)
    assert read.status_code == 200
    expect(await api.entry_of(rid), api.ann, "read", "case", case_id, case_id=case_id)
    refused, rid = await api.call("GET", case, api.bob)
    assert refused.status_code == 404
    expect(await api.entry_of(rid), api.bob, "read", "case", case_id, case_id=case_id, outcome=DENIED)

    found, rid = await api.call("GET", "/v1/cases", api.ann, params={"family_name": "Doe", "limit": "5"})
    assert found.status_code == 200 and [c["id"] for c in found.json()["items"]] == [case_id]
    expect(await api.entry_of(rid), api.ann, "search", "case", resource_ids=[case_id])
    nothing, rid = await api.call("GET", "/v1/cases", api.bob)
    assert nothing.status_code == 200 and nothing.json()["items"] == []
    expect(await api.entry_of(rid), api.bob, "search", "case")
    legacy, rid = await api.call("GET", "/v1/cases", api.ann, params={"page": "1", "per_page": "10"})
    assert legacy.status_code == 200 and [c["id"] for c in legacy.json()["items"]] == [case_id]
    expect(await api.entry_of(rid), api.ann, "list", "case", resource_ids=[case_id])

    etag = read.headers["etag"]
    changed, rid = await api.call(
        "PATCH", case, api.ann, json={"title": "Roe family", "family_name": None}, headers={"If-Match": etag}
    )
    assert changed.status_code == 200, changed.text
    fields = ["family_name", "title"]
    expect(await api.entry_of(rid), api.ann, "update", "case", case_id, case_id=case_id, changed_fields=fields)
    etag = changed.headers["etag"]
    same, rid = await api.call("PATCH", case, api.ann, json={"title": "Roe family"}, headers={"If-Match": etag})
    assert same.status_code == 200
    expect(await api.entry_of(rid), api.ann, "update", "case", case_id, case_id=case_id)
    refused, rid = await api.call("PATCH", case, api.bob, json={"title": "X"}, headers={"If-Match": etag})
    assert refused.status_code == 404
    expect(await api.entry_of(rid), api.bob, "update", "case", case_id, case_id=case_id, outcome=DENIED)

    placements, rid = await api.call("GET", f"{case}/placements", api.ann)
    assert placements.status_code == 200
    expect(await api.entry_of(rid), api.ann, "list", "placement", case_id=case_id)
    refused, rid = await api.call("GET", f"{case}/placements", api.bob)
    assert refused.status_code == 404
    expect(await api.entry_of(rid), api.bob, "list", "placement", case_id=case_id, outcome=DENIED)

    reason = {"reason": "The family moved away."}
    refused, rid = await api.call("POST", f"{case}/closure", api.bob, json=reason, headers={"If-Match": etag})
    assert refused.status_code == 404
    expect(await api.entry_of(rid), api.bob, "close", "case", case_id, case_id=case_id, outcome=DENIED)
    closed, rid = await api.call("POST", f"{case}/closure", api.ann, json=reason, headers={"If-Match": etag})
    assert closed.status_code == 200, closed.text
    lifecycle = ["close_reason", "closed_at", "status"]
    expect(await api.entry_of(rid), api.ann, "close", "case", case_id, case_id=case_id, changed_fields=lifecycle)

    refused, rid = await api.call("POST", f"{case}/reopening", api.ann, json=reason)
    assert refused.status_code == 403
    expect(await api.entry_of(rid), api.ann, "reopen", "case", case_id, case_id=case_id, outcome=DENIED)
    reopened, rid = await api.call("POST", f"{case}/reopening", api.sue, json=reason)
    assert reopened.status_code == 200, reopened.text
    expect(await api.entry_of(rid), api.sue, "reopen", "case", case_id, case_id=case_id, changed_fields=lifecycle)


async def test_assigning_and_unassigning_are_recorded_with_the_worker(api: Api) -> None:
    case_id = (await api.case())["id"]
    assignments = f"/v1/cases/{case_id}/assignments"
    worker = str(api.bob.sub)

    refused, rid = await api.call("POST", assignments, api.ann, json={"worker_sub": worker})
    assert refused.status_code == 403
    expect(await api.entry_of(rid), api.ann, "assign", "case", case_id, case_id=case_id, outcome=DENIED)
    assigned, rid = await api.call("POST", assignments, api.sue, json={"worker_sub": worker})
    assert assigned.status_code == 201
    changed = ["assigned_workers"]
    kw: dict[str, Any] = {"case_id": case_id, "resource_ids": [worker]}
    expect(await api.entry_of(rid), api.sue, "assign", "case", case_id, changed_fields=changed, **kw)
    again, rid = await api.call("POST", assignments, api.sue, json={"worker_sub": worker})
    assert again.status_code == 200
    expect(await api.entry_of(rid), api.sue, "assign", "case", case_id, **kw)
    unknown = uuid.uuid4()
    refused, rid = await api.call("POST", f"/v1/cases/{unknown}/assignments", api.sue, json={"worker_sub": worker})
    assert refused.status_code == 404
    expect(await api.entry_of(rid), api.sue, "assign", "case", unknown, case_id=unknown, outcome=DENIED)

    refused, rid = await api.call("DELETE", f"{assignments}/{worker}", api.ann)
    assert refused.status_code == 403
    expect(await api.entry_of(rid), api.ann, "unassign", "case", case_id, case_id=case_id, outcome=DENIED)
    removed, rid = await api.call("DELETE", f"{assignments}/{worker}", api.sue)
    assert removed.status_code == 204
    expect(await api.entry_of(rid), api.sue, "unassign", "case", case_id, changed_fields=changed, **kw)


async def test_contacts_recorded_read_and_listed_are_recorded(api: Api) -> None:
    case_id = (await api.case())["id"]
    contacts = f"/v1/cases/{case_id}/contacts"

    created, rid = await api.call("POST", contacts, api.ann, json=CONTACT_BODY)
    assert created.status_code == 201
    contact_id = created.json()["id"]
    expect(await api.entry_of(rid), api.ann, "create", "contact", contact_id, case_id=case_id)
    refused, rid = await api.call("POST", contacts, api.bob, json=CONTACT_BODY)
    assert refused.status_code == 404
    expect(await api.entry_of(rid), api.bob, "create", "contact", case_id=case_id, outcome=DENIED)

    read, rid = await api.call("GET", f"{contacts}/{contact_id}", api.ann)
    assert read.status_code == 200
    expect(await api.entry_of(rid), api.ann, "read", "contact", contact_id, case_id=case_id)
    refused, rid = await api.call("GET", f"{contacts}/{contact_id}", api.bob)
    assert refused.status_code == 404
    expect(await api.entry_of(rid), api.bob, "read", "contact", contact_id, case_id=case_id, outcome=DENIED)

    for params in ({"limit": "10"}, {"page": "1", "per_page": "10"}):
        listed, rid = await api.call("GET", contacts, api.ann, params=params)
        assert listed.status_code == 200 and [c["id"] for c in listed.json()["items"]] == [contact_id]
        expect(await api.entry_of(rid), api.ann, "list", "contact", case_id=case_id, resource_ids=[contact_id])
        refused, rid = await api.call("GET", contacts, api.bob, params=params)
        assert refused.status_code == 404
        expect(await api.entry_of(rid), api.bob, "list", "contact", case_id=case_id, outcome=DENIED)


async def test_attachments_uploaded_read_listed_and_downloaded_are_recorded(api: Api) -> None:
    case_id = (await api.case())["id"]
    contact_id = (await api.contact(case_id))["id"]
    attachments = f"/v1/cases/{case_id}/contacts/{contact_id}/attachments"
    files = {"file": ("photo.png", PNG, "image/png")}

    uploaded, rid = await api.call("POST", attachments, api.ann, files=files)
    assert uploaded.status_code == 201, uploaded.text
    attachment_id = uploaded.json()["id"]
    expect(await api.entry_of(rid), api.ann, "upload", "attachment", attachment_id, case_id=case_id)
    refused, rid = await api.call("POST", attachments, api.bob, files=files)
    assert refused.status_code == 404
    expect(await api.entry_of(rid), api.bob, "upload", "attachment", case_id=case_id, outcome=DENIED)

    attachment = f"{attachments}/{attachment_id}"
    for path, action in ((attachment, "read"), (f"{attachment}/content", "download")):
        served, rid = await api.call("GET", path, api.ann)
        assert served.status_code == 200
        expect(await api.entry_of(rid), api.ann, action, "attachment", attachment_id, case_id=case_id)
        refused, rid = await api.call("GET", path, api.bob)
        assert refused.status_code == 404
        expect(await api.entry_of(rid), api.bob, action, "attachment", attachment_id, case_id=case_id, outcome=DENIED)
    assert served.content == PNG

    for params in ({"limit": "10"}, {"page": "1", "per_page": "10"}):
        listed, rid = await api.call("GET", attachments, api.ann, params=params)
        assert listed.status_code == 200 and [a["id"] for a in listed.json()["items"]] == [attachment_id]
        expect(await api.entry_of(rid), api.ann, "list", "attachment", case_id=case_id, resource_ids=[attachment_id])
        refused, rid = await api.call("GET", attachments, api.bob, params=params)
        assert refused.status_code == 404
        expect(await api.entry_of(rid), api.bob, "list", "attachment", case_id=case_id, outcome=DENIED)


async def test_a_case_history_shows_the_changes_to_the_case_its_contacts_and_attachments(api: Api) -> None:
    case_id = (await api.case())["id"]
    key = {"Idempotency-Key": str(uuid.uuid4())}
    contacts = f"/v1/cases/{case_id}/contacts"
    contact_id = (await api.call("POST", contacts, api.ann, json=CONTACT_BODY, headers=key))[0].json()["id"]
    attachments = f"/v1/cases/{case_id}/contacts/{contact_id}/attachments"
    uploaded, _ = await api.call("POST", attachments, api.ann, files={"file": ("p.png", PNG, "image/png")})
    etag = (await api.call("GET", f"/v1/cases/{case_id}", api.ann))[0].headers["etag"]
    await api.call("GET", attachments, api.ann)
    # Reads of every kind and refused attempts are recorded, and left out of the history: a
    # supervisor's download, a replay, another worker's refused read and refused change.
    downloaded, _ = await api.call("GET", f"{attachments}/{uploaded.json()['id']}/content", api.sue)
    replayed, _ = await api.call("POST", contacts, api.ann, json=CONTACT_BODY, headers=key)
    assert downloaded.status_code == 200 and replayed.json()["id"] == contact_id
    await api.call("GET", f"/v1/cases/{case_id}", api.bob)
    refused, _ = await api.call(
        "PATCH", f"/v1/cases/{case_id}", api.bob, json={"title": "x"}, headers={"If-Match": etag}
    )
    assert refused.status_code == 404
    recorded = {(e.action.value, e.outcome.value) for e in await api.entries(AuditFilter(case_id=uuid.UUID(case_id)))}
    assert {("download", "allowed"), ("replay", "allowed"), ("update", "denied")} <= recorded

    history, _ = await api.call("GET", f"/v1/cases/{case_id}/history", api.ann)
    assert history.status_code == 200
    shown = [(e["action"], e["resource_type"], e["resource_id"]) for e in history.json()["items"]]
    assert shown == [
        ("upload", "attachment", uploaded.json()["id"]),
        ("create", "contact", contact_id),
        ("create", "case", case_id),
    ]
    # Where a colleague or a supervisor worked from is for supervisors, in the audit list.
    assert {(e["request_id"], e["client_ip"]) for e in history.json()["items"]} == {(None, None)}
    listed, _ = await api.call("GET", "/v1/audit", api.sue, params={"case_id": case_id, "action": "upload"})
    assert [(e["request_id"] is not None, e["client_ip"]) for e in listed.json()["items"]] == [(True, "127.0.0.1")]


@pytest.fixture
async def failing_audit(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on an entry of a request whose id starts with `FAILS` cannot be written, as when
    the database's disk is full (memory: the audit repository fails; PostgreSQL: a trigger in the
    test's own database raises)."""
    if api.container.settings().database.url == "":
        real = MemoryAuditRepository.append

        async def append(self: MemoryAuditRepository, entries: Sequence[AuditEntry]) -> list[AuditEntry]:
            if any((e.request_id or "").startswith(FAILS) for e in entries):
                raise DatabaseUnavailable("no space left for the audit entry")
            return await real(self, entries)

        monkeypatch.setattr(MemoryAuditRepository, "append", append)
        return
    conn = await asyncpg.connect(libpq_dsn(api.container.settings().database.url))
    try:
        await conn.execute(
            f"""
            CREATE FUNCTION test_audit_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.request_id LIKE '{FAILS}%' THEN
                    RAISE EXCEPTION 'no space left for the audit entry' USING ERRCODE = 'disk_full';
                END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER test_audit_disk_full BEFORE INSERT ON audit_entries
                FOR EACH ROW EXECUTE FUNCTION test_audit_disk_full();
            """
        )
    finally:
        await conn.close()


def unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.json()["type"].endswith("dependency-unavailable")


@pytest.mark.usefixtures("failing_audit")
async def test_an_action_whose_entry_cannot_be_written_is_neither_done_nor_served(api: Api) -> None:
    case_id = (await api.case())["id"]
    contact_id = (await api.contact(case_id))["id"]
    contacts = f"/v1/cases/{case_id}/contacts"
    attachments = f"{contacts}/{contact_id}/attachments"
    before = len(await api.entries())

    # Writes: nothing is committed.
    response, _ = await api.call("POST", "/v1/cases", api.ann, rid=f"{FAILS}open", json={"title": "Roe"})
    unavailable(response)
    response, _ = await api.call("POST", contacts, api.ann, rid=f"{FAILS}contact", json=CONTACT_BODY)
    unavailable(response)
    files = {"file": ("p.png", PNG, "image/png")}
    response, _ = await api.call("POST", attachments, api.ann, rid=f"{FAILS}upload", files=files)
    unavailable(response)
    read, _ = await api.call("GET", f"/v1/cases/{case_id}", api.ann)
    response, _ = await api.call(
        "PATCH",
        f"/v1/cases/{case_id}",
        api.ann,
        rid=f"{FAILS}patch",
        json={"title": "Changed"},
        headers={"If-Match": read.headers["etag"]},
    )
    unavailable(response)

    listed, _ = await api.call("GET", "/v1/cases", api.ann)
    assert [(c["id"], c["title"], c["version"]) for c in listed.json()["items"]] == [
        (case_id, "Doe family", read.json()["version"])
    ]
    listed, _ = await api.call("GET", contacts, api.ann)
    assert [c["id"] for c in listed.json()["items"]] == [contact_id]
    listed, _ = await api.call("GET", attachments, api.ann)
    assert listed.json()["items"] == []

    # Reads: not served, and a refusal is not answered either.
    for path in (f"/v1/cases/{case_id}", f"{contacts}/{contact_id}", contacts, attachments, "/v1/cases"):
        response, _ = await api.call("GET", path, api.ann, rid=f"{FAILS}read")
        unavailable(response)
    response, _ = await api.call("GET", f"/v1/cases/{case_id}", api.bob, rid=f"{FAILS}denied")
    unavailable(response)

    # None of these requests left an entry.
    assert not [e for e in await api.entries() if (e.request_id or "").startswith(FAILS)]
    assert len(await api.entries()) == before + 4  # the four reads of this test that could be recorded


async def test_a_refused_write_under_an_idempotency_key_is_recorded_once_then_replayed(api: Api) -> None:
    case_id = (await api.case())["id"]
    key = {"Idempotency-Key": str(uuid.uuid4())}
    contacts = f"/v1/cases/{case_id}/contacts"
    refused, rid = await api.call("POST", contacts, api.bob, json=CONTACT_BODY, headers=key)
    assert refused.status_code == 404
    expect(await api.entry_of(rid), api.bob, "create", "contact", case_id=case_id, outcome=DENIED)
    again, rid = await api.call("POST", contacts, api.bob, json=CONTACT_BODY, headers=key)
    assert again.status_code == 404 and again.headers["idempotent-replayed"] == "true"
    replay = await api.entry_of(rid)
    assert (replay.action.value, replay.resource_type, replay.resource_id) == ("replay", "request", f"POST {contacts}")
    assert replay.outcome is DENIED  # a refusal retried is still refused (it was recorded allowed)
    # The case's owner replaying an accepted write: allowed.
    accepted, _ = await api.call("POST", contacts, api.ann, json=CONTACT_BODY, headers=key)
    assert accepted.status_code == 201
    replayed, rid = await api.call("POST", contacts, api.ann, json=CONTACT_BODY, headers=key)
    assert replayed.headers["idempotent-replayed"] == "true"
    assert (await api.entry_of(rid)).outcome is AuditOutcome.ALLOWED


@pytest.mark.usefixtures("failing_audit")
async def test_a_write_under_an_idempotency_key_whose_entry_fails_is_retried_whole(api: Api) -> None:
    key = {"Idempotency-Key": str(uuid.uuid4())}
    body = {"title": "Held"}
    failed, _ = await api.call("POST", "/v1/cases", api.ann, rid=f"{FAILS}held", json=body, headers=key)
    unavailable(failed)
    listed, _ = await api.call("GET", "/v1/cases", api.ann)
    assert listed.json()["items"] == []
    retried, rid = await api.call("POST", "/v1/cases", api.ann, json=body, headers=key)
    assert retried.status_code == 201, retried.text
    case_id = retried.json()["id"]
    expect(await api.entry_of(rid), api.ann, "create", "case", case_id, case_id=case_id)


async def test_a_download_the_object_store_cannot_serve_is_not_recorded_as_served(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    case_id = (await api.case())["id"]
    contact_id = (await api.contact(case_id))["id"]
    attachments = f"/v1/cases/{case_id}/contacts/{contact_id}/attachments"
    uploaded, _ = await api.call("POST", attachments, api.ann, files={"file": ("p.png", PNG, "image/png")})
    assert uploaded.status_code == 201, uploaded.text
    store = api.container.object_store()

    async def down(*_args: object, **_kwargs: object) -> None:
        raise ObjectStoreUnavailable("the object store does not answer")

    monkeypatch.setattr(store, "open", down)
    served, rid = await api.call("GET", f"{attachments}/{uploaded.json()['id']}/content", api.ann)
    assert served.status_code == 503, served.text
    assert [e for e in await api.entries() if e.request_id == rid] == []
