"""Whatever the object store's put raises, the upload is compensated (no pending row is left
for the scanner, ``upload_failed`` is staged) and the client gets a problem; the same
Idempotency-Key then retries. On the memory adapters and on real PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import httpx
import pytest
from dependency_injector import providers

from craig.adapters.memory.object_store import MemoryObjectStore
from craig.domain.access import Role
from craig.entrypoints.container import Container
from tests.support.apps import auth, serving
from tests.support.files import png_bytes
from tests.support.problems import problem_code

pytestmark = pytest.mark.integration

PNG = png_bytes()


class BreakablePut(MemoryObjectStore):
    """A memory store whose put raises ``error`` while it is set."""

    def __init__(self) -> None:
        super().__init__()
        self.error: BaseException | None = None

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        if self.error is not None:
            raise self.error
        await super().put(key, data, content_type)


@attrs.define
class Api:
    container: Container
    client: httpx.AsyncClient
    ann: dict[str, str]
    store: BreakablePut

    async def attachments_path(self) -> str:
        case = (await self.client.post("/v1/cases", json={"title": "Doe"}, headers=self.ann)).json()["id"]
        body = {"contact_type": "home_visit", "occurred_at": "2026-01-05T10:00:00+01:00", "summary": "Visited."}
        contact = (await self.client.post(f"/v1/cases/{case}/contacts", json=body, headers=self.ann)).json()["id"]
        return f"/v1/cases/{case}/contacts/{contact}/attachments"

    async def upload(self, path: str, key: str) -> httpx.Response:
        files = {"file": ("a.png", PNG, "image/png")}
        return await self.client.post(path, files=files, headers={**self.ann, "Idempotency-Key": key})

    async def events(self, prefix: str) -> list[str]:
        async with self.container.outbox_relay_store().claim_batch(1000) as batch:
            return [e.envelope.type for e in batch.events if e.envelope.type.startswith(prefix)]


@pytest.fixture(params=["memory", "postgres"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    async with serving(request.param, tmp_path, pg_url) as (container, client):
        store = BreakablePut()
        container.object_store.override(providers.Object(store))
        yield Api(container, client, auth(container, role=Role.CASEWORKER), store)


@pytest.mark.parametrize(
    ("error", "status", "problem"),
    [
        (ValueError("the SDK rejected an argument"), 500, "internal-error"),
        (TimeoutError("the SDK timed out"), 500, "internal-error"),
        (KeyError("the SDK lost a key"), 500, "internal-error"),
        # not this request's cancellation (say the SDK's own future was cancelled): unavailable
        (asyncio.CancelledError(), 503, "dependency-unavailable"),
    ],
    ids=["ValueError", "TimeoutError", "KeyError", "CancelledError"],
)
async def test_any_put_failure_is_compensated_and_answered_as_a_problem(
    api: Api, error: BaseException, status: int, problem: str
) -> None:
    path = await api.attachments_path()
    api.store.error = error
    failed = await api.upload(path, "upload-1")
    assert failed.status_code == status, failed.text
    assert failed.headers["content-type"] == "application/problem+json"
    assert problem_code(failed.json()) == problem
    assert "Traceback" not in failed.text
    assert not str(error) or str(error) not in failed.text
    assert (await api.client.get(path, headers=api.ann)).json()["items"] == []  # no pending row
    assert await api.events("cases.contact_attachment") == [
        "cases.contact_attachment_uploaded",
        "cases.contact_attachment_upload_failed",
    ]

    api.store.error = None
    retried = await api.upload(path, "upload-1")
    assert retried.status_code == 201 and "idempotent-replayed" not in retried.headers
    listed = (await api.client.get(path, headers=api.ann)).json()
    assert [item["object_status"] for item in listed["items"]] == ["present"]
