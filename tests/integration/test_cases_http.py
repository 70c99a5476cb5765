"""Cases, contacts and attachments over real HTTP, on the memory adapters and on real PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from dependency_injector import providers
from sqlalchemy import text

from craig.adapters.memory.object_store import MemoryObjectStore
from craig.domain.access import Role
from craig.entrypoints.container import Container
from craig.entrypoints.settings import AttachmentSettings
from tests.support.apps import auth, serving
from tests.support.files import EXE_HEADER, png_bytes
from tests.support.problems import problem_code

pytestmark = pytest.mark.integration

MAX_BYTES = 64 * 1024
PNG = png_bytes()


@attrs.define
class Api:
    container: Container
    client: httpx.AsyncClient
    kind: str
    ann: dict[str, str]

    async def case(self, headers: dict[str, str] | None = None) -> str:
        response = await self.client.post("/v1/cases", json={"title": "Doe family"}, headers=headers or self.ann)
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    async def contact(self, case_id: str, summary: str = "Saw both children.") -> str:
        body = {"contact_type": "home_visit", "occurred_at": "2026-01-05T10:00:00+01:00", "summary": summary}
        response = await self.client.post(f"/v1/cases/{case_id}/contacts", json=body, headers=self.ann)
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    async def upload(self, path: str, files: Any, key: str | None = None, **data: str) -> httpx.Response:
        headers = {**self.ann, **({"Idempotency-Key": key} if key else {})}
        return await self.client.post(path, files=files, data=data, headers=headers)


@pytest.fixture(params=["memory", "postgres"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    settings = AttachmentSettings(max_bytes=MAX_BYTES)
    async with serving(request.param, tmp_path, pg_url, attachments=settings) as (container, client):
        yield Api(container, client, request.param, auth(container, role=Role.CASEWORKER, name="Ann"))


def problem(response: httpx.Response, status: int, type_suffix: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    if type_suffix:
        assert problem_code(body) == type_suffix
    return body


async def test_cases_visibility_and_assignment(api: Api) -> None:
    created = await api.client.post("/v1/cases", json={"title": " Doe ", "family_name": "Doe"}, headers=api.ann)
    assert created.status_code == 201
    case = created.json()
    assert created.headers["location"] == f"/v1/cases/{case['id']}" and case["title"] == "Doe"
    assert (await api.client.get(created.headers["location"], headers=api.ann)).json() == case

    bob_sub = uuid.uuid4()
    bob = auth(api.container, sub=bob_sub, name="Bob")
    problem(await api.client.get(f"/v1/cases/{case['id']}", headers=bob), 404, "not-found")
    problem(await api.client.get(f"/v1/cases/{uuid.uuid4()}", headers=api.ann), 404)
    assign = {"worker_sub": str(bob_sub)}
    problem(await api.client.post(f"/v1/cases/{case['id']}/assignments", json=assign, headers=bob), 403, "forbidden")
    supervisor = auth(api.container, role=Role.SUPERVISOR)
    first = await api.client.post(f"/v1/cases/{case['id']}/assignments", json=assign, headers=supervisor)
    again = await api.client.post(f"/v1/cases/{case['id']}/assignments", json=assign, headers=supervisor)
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["assigned_workers"] == [str(bob_sub)]
    read = await api.client.get(f"/v1/cases/{case['id']}", headers=bob)
    assert read.status_code == 200
    # One ETag, one body: the assignment answered the case as stored (its updated_at was the
    # case's previous one under the new ETag).
    assert (first.headers["etag"], first.json()) == (read.headers["etag"], read.json())
    assert datetime.fromisoformat(first.json()["updated_at"]) > datetime.fromisoformat(case["updated_at"])

    for _ in range(2):
        await api.case()
    page = (await api.client.get("/v1/cases?page=2&per_page=2", headers=api.ann)).json()
    assert (page["page"], page["per_page"], page["total"], len(page["items"])) == (2, 2, 3, 1)
    assert (await api.client.get("/v1/cases?per_page=50", headers=bob)).json()["total"] == 1
    assert len((await api.client.get("/v1/cases", headers=bob)).json()["items"]) == 1
    problem(await api.client.get("/v1/cases?per_page=1000", headers=api.ann), 422)
    problem(await api.client.post("/v1/cases", json={"title": ""}, headers=api.ann), 422)
    problem(
        await api.client.post("/v1/cases", json={"title": "x", "opened_at": "2026-01-01T10:00:00"}, headers=api.ann),
        400,
    )


async def test_contacts(api: Api) -> None:
    case_id = await api.case()
    contact_id = await api.contact(case_id, summary="The child disclosed bruising")
    got = await api.client.get(f"/v1/cases/{case_id}/contacts/{contact_id}", headers=api.ann)
    assert got.json()["summary"] == "The child disclosed bruising" and got.json()["worker_name"] == "Ann"
    listed = (await api.client.get(f"/v1/cases/{case_id}/contacts?per_page=50", headers=api.ann)).json()
    assert listed["total"] == 1 and listed["items"][0]["id"] == contact_id
    keyset = (await api.client.get(f"/v1/cases/{case_id}/contacts", headers=api.ann)).json()
    assert keyset == {"items": listed["items"], "next_cursor": None}
    bad = {"contact_type": "séance", "occurred_at": "2026-01-05T10:00:00Z", "summary": "x"}
    problem(await api.client.post(f"/v1/cases/{case_id}/contacts", json=bad, headers=api.ann), 422, "invalid-input")
    problem(await api.client.get(f"/v1/cases/{case_id}/contacts", headers=auth(api.container)), 404)
    if api.kind == "postgres":  # the app's field cipher encrypts at rest
        async with api.container.postgres().transaction() as conn:
            stored = (await conn.execute(text("SELECT summary FROM contacts"))).scalar_one()
        assert "bruising" not in stored


async def test_upload_validation_answers(api: Api) -> None:
    case_id = await api.case()
    path = f"/v1/cases/{case_id}/contacts/{await api.contact(case_id)}/attachments"
    too_big = b"\x89PNG\r\n\x1a\n" + b"\x00" * MAX_BYTES
    problem(await api.upload(path, {"file": ("a.png", too_big, "image/png")}), 413, "attachment-too-large")
    huge = b"\x89PNG\r\n\x1a\n" + b"\x00" * (4 * MAX_BYTES)
    problem(await api.upload(path, {"file": ("a.png", huge, "image/png")}), 413)
    problem(await api.upload(path, {"file": ("a.png", huge, "image/png")}, key="big"), 413)
    problem(
        await api.upload(path, {"file": ("a.exe", EXE_HEADER, "application/x-msdownload")}),
        415,
        "unsupported-attachment-type",
    )
    problem(await api.upload(path, {"file": ("a.png", EXE_HEADER, "image/png")}), 415, "attachment-content-mismatch")
    problem(await api.upload(path, {"file": ("a.png", b"", "image/png")}), 422, "empty-attachment")
    problem(await api.upload(path, {"other": ("a.png", PNG, "image/png")}), 422, "attachment-file-missing")
    problem(await api.upload(path, {"file": (None, "not a file")}), 422, "attachment-file-missing")
    problem(await api.client.post(path, data={"file": "x"}, headers=api.ann), 415)  # not multipart at all
    problem(
        await api.upload(
            f"/v1/cases/{case_id}/contacts/{uuid.uuid4()}/attachments", {"file": ("a.png", PNG, "image/png")}
        ),
        404,
    )
    listed = (await api.client.get(path, headers=api.ann)).json()
    assert listed["items"] == [] and listed["next_cursor"] is None


async def test_upload_read_download_and_access(api: Api) -> None:
    case_id = await api.case()
    contact_id = await api.contact(case_id)
    path = f"/v1/cases/{case_id}/contacts/{contact_id}/attachments"
    created = await api.upload(path, {"file": ("C:\\fotos\\küche.png", PNG, "image/png")}, attachment_type="photo")
    assert created.status_code == 201, created.text
    body = created.json()
    assert set(body) >= {
        "id",
        "file_name",
        "content_type",
        "file_size",
        "object_status",
        "uploaded_by",
        "worker_name",
        "created_at",
    }
    assert (body["file_name"], body["file_size"], body["object_status"]) == ("küche.png", len(PNG), "present")
    assert created.headers["location"] == f"{path}/{body['id']}"
    assert (await api.client.get(f"{path}/{body['id']}", headers=api.ann)).json() == body
    assert (await api.client.get(path, headers=api.ann)).json()["items"] == [body]
    content = await api.client.get(f"{path}/{body['id']}/content", headers=api.ann)
    assert content.status_code == 200 and content.content == PNG
    assert content.headers["content-type"] == "image/png"
    assert content.headers["x-content-type-options"] == "nosniff"
    assert content.headers["content-length"] == str(len(PNG))
    assert content.headers["cache-control"] == "private, no-store"
    assert content.headers["content-security-policy"] == "default-src 'none'; sandbox"
    assert (
        content.headers["content-disposition"] == "attachment; filename=\"kuche.png\"; filename*=UTF-8''k%C3%BCche.png"
    )
    problem(await api.client.get(f"{path}/{body['id']}/content", headers=auth(api.container)), 404)
    problem(await api.client.get(f"{path}/{uuid.uuid4()}/content", headers=api.ann), 404)


async def test_head_of_a_download_answers_as_the_get_would_and_records_a_read(api: Api) -> None:
    """A HEAD of an attachment's content answers what the GET would (the same status and headers,
    no content) without reading the blob: the store is asked its size only. The audit trail
    records a read of the attachment, allowed or denied, never a download that did not happen."""
    store = MemoryObjectStore()
    api.container.object_store.override(providers.Object(store))
    case_id = await api.case()
    contact_id = await api.contact(case_id)
    path = f"/v1/cases/{case_id}/contacts/{contact_id}/attachments"
    body = (await api.upload(path, {"file": ("küche.png", PNG, "image/png")})).json()
    content = f"{path}/{body['id']}/content"
    got = await api.client.get(content, headers=api.ann)
    head = await api.client.head(content, headers=api.ann)
    assert got.status_code == head.status_code == 200 and head.content == b""
    for name in ("content-type", "content-length", "content-disposition", "cache-control", "content-security-policy"):
        assert head.headers[name] == got.headers[name], name

    store.available = False  # the store down: both 503, neither recorded
    assert (await api.client.head(content, headers=api.ann)).status_code == 503
    problem(await api.client.get(content, headers=api.ann), 503)
    store.available = True
    assert (await api.client.head(content, headers=auth(api.container))).status_code == 404  # a stranger
    assert (await api.client.head(f"{path}/{uuid.uuid4()}/content", headers=api.ann)).status_code == 404

    # The row present but its blob gone: both 404.
    (stored,) = [key async for key in _keys(store)]
    await store.delete(stored)
    assert (await api.client.head(content, headers=api.ann)).status_code == 404
    problem(await api.client.get(content, headers=api.ann), 404)

    boss = auth(api.container, role=Role.SUPERVISOR, name="Sue")
    trail = await api.client.get("/v1/audit", params={"resource_type": "attachment", "limit": "50"}, headers=boss)
    assert trail.status_code == 200, trail.text
    mine = [(e["action"], e["outcome"]) for e in trail.json()["items"] if e["resource_id"] == body["id"]]
    assert sorted(mine) == sorted(
        [
            ("upload", "allowed"),
            ("download", "allowed"),  # the one GET that was served
            ("read", "allowed"),  # Ann's first HEAD
            ("read", "denied"),  # the stranger's HEAD
        ]
    ), mine


async def test_head_of_a_pending_attachment_is_refused_and_recorded_as_refused(api: Api) -> None:
    case_id = await api.case()
    contact_id = await api.contact(case_id)
    path = f"/v1/cases/{case_id}/contacts/{contact_id}/attachments"
    body = (await api.upload(path, {"file": ("a.txt", b"hello", "text/plain")})).json()
    await _set_status(api, "pending")
    assert (await api.client.head(f"{path}/{body['id']}/content", headers=api.ann)).status_code == 404
    boss = auth(api.container, role=Role.SUPERVISOR, name="Sue")
    trail = await api.client.get("/v1/audit", params={"resource_type": "attachment", "limit": "50"}, headers=boss)
    mine = [(e["action"], e["outcome"]) for e in trail.json()["items"] if e["resource_id"] == body["id"]]
    assert sorted(mine) == [("read", "denied"), ("upload", "allowed")], mine


async def _keys(store: MemoryObjectStore) -> AsyncIterator[str]:
    async for stored in store.list("cases/"):
        yield stored.key


async def _set_status(api: Api, status: str) -> None:
    """Every attachment back to ``status``, as after a crash between the phases (``pending``)."""
    uow = api.container.uow()
    async with uow:
        from craig.adapters.memory.attachments import ATTACHMENTS

        if api.kind == "memory":
            tx = await uow.session.tx()  # type: ignore[attr-defined]
            for row in list(tx.rows(ATTACHMENTS)):
                tx.put(ATTACHMENTS, row.id, attrs.evolve(row, object_status=status))
        else:
            await uow.session.execute(  # type: ignore[attr-defined]
                text("UPDATE contact_attachments SET object_status = :status"), {"status": status}
            )
        await uow.commit()


async def test_pending_attachments_are_listed_but_not_served(api: Api) -> None:
    case_id = await api.case()
    contact_id = await api.contact(case_id)
    path = f"/v1/cases/{case_id}/contacts/{contact_id}/attachments"
    body = (await api.upload(path, {"file": ("a.txt", b"hello", "text/plain")})).json()
    await _set_status(api, "pending")
    assert (await api.client.get(f"{path}/{body['id']}", headers=api.ann)).json()["object_status"] == "pending"
    problem(await api.client.get(f"{path}/{body['id']}/content", headers=api.ann), 404)


async def test_store_outage_is_503_and_the_same_key_retries(api: Api) -> None:
    store = MemoryObjectStore()
    api.container.object_store.override(providers.Object(store))
    case_id = await api.case()
    contact_id = await api.contact(case_id)
    path = f"/v1/cases/{case_id}/contacts/{contact_id}/attachments"
    files = {"file": ("a.png", PNG, "image/png")}
    store.available = False
    outage = await api.upload(path, files, key="upload-1")
    problem(outage, 503, "dependency-unavailable")
    assert outage.headers["retry-after"]
    assert (await api.client.get(path, headers=api.ann)).json()["items"] == []
    store.available = True
    retried = await api.upload(path, files, key="upload-1")
    assert retried.status_code == 201 and "idempotent-replayed" not in retried.headers
    replayed = await api.upload(path, files, key="upload-1")
    assert replayed.headers["idempotent-replayed"] == "true" and replayed.content == retried.content
    listed = (await api.client.get(path, headers=api.ann)).json()
    assert [item["object_status"] for item in listed["items"]] == ["present"]
    # One blob: the retry's (under a key of its own, never the failed attempt's).
    assert [o.key.rpartition("/")[0] async for o in store.list("cases/")] == [f"cases/contacts/{case_id}/{contact_id}"]


async def test_a_lost_response_is_resumed_not_duplicated(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """The database fails exactly when the idempotency layer stores the 201: the client gets a
    503, Phase 1 and the blob are already durable. The retry with the same key completes that
    same attachment instead of creating a second one."""
    from craig.adapters.memory.idempotency import MemoryIdempotencySlots
    from craig.adapters.postgres.idempotency import PostgresIdempotencySlots
    from craig.ports.errors import DatabaseUnavailable

    slots = MemoryIdempotencySlots if api.kind == "memory" else PostgresIdempotencySlots
    original = slots.finalize_succeeded
    failures = iter([True])

    async def flaky(self: Any, *args: Any) -> None:
        if next(failures, False):
            raise DatabaseUnavailable("injected at finalize")
        await original(self, *args)

    monkeypatch.setattr(slots, "finalize_succeeded", flaky)
    case_id = await api.case()
    contact_id = await api.contact(case_id)
    path = f"/v1/cases/{case_id}/contacts/{contact_id}/attachments"
    files = {"file": ("a.png", PNG, "image/png")}
    problem(await api.upload(path, files, key="lost-1"), 503)
    pending = (await api.client.get(path, headers=api.ann)).json()["items"]
    assert [item["object_status"] for item in pending] == ["pending"]

    retried = await api.upload(path, files, key="lost-1")
    assert retried.status_code == 201 and retried.json()["id"] == pending[0]["id"]
    listed = (await api.client.get(f"{path}?per_page=10", headers=api.ann)).json()
    assert listed["total"] == 1 and listed["items"][0]["object_status"] == "present"
    content = await api.client.get(f"{path}/{pending[0]['id']}/content", headers=api.ann)
    assert content.content == PNG


async def test_a_key_reused_after_its_slot_was_purged_makes_a_new_attachment(api: Api) -> None:
    """The attachment id comes from the idempotency slot, not from the key: a new slot (the
    old one purged after its retention) is a new upload, with its own file."""
    from datetime import timedelta

    case_id = await api.case()
    contact_id = await api.contact(case_id)
    path = f"/v1/cases/{case_id}/contacts/{contact_id}/attachments"
    first = await api.upload(path, {"file": ("first.txt", b"first file", "text/plain")}, key="recycled")
    assert first.status_code == 201, first.text
    assert await api.container.idempotency_store().purge(timedelta(0), 100) >= 1

    second = await api.upload(path, {"file": ("second.txt", b"second file", "text/plain")}, key="recycled")
    assert second.status_code == 201, second.text
    assert "idempotent-replayed" not in second.headers
    assert second.json()["id"] != first.json()["id"] and second.json()["file_name"] == "second.txt"
    content = await api.client.get(f"{second.headers['location']}/content", headers=api.ann)
    assert content.content == b"second file"
    listed = (await api.client.get(path, headers=api.ann)).json()
    assert sorted(item["file_name"] for item in listed["items"]) == ["first.txt", "second.txt"]
    assert (await api.client.get(f"{first.headers['location']}/content", headers=api.ann)).content == b"first file"
