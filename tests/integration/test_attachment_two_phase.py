"""The two-phase upload and the scanner against real PostgreSQL and a real S3 (SeaweedFS)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import attrs
import pytest
from sqlalchemy import text

from craig.adapters.clock import SystemClock
from craig.adapters.objectstore.minio import MinioObjectStore
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.adapters.sealed_fields import ATTACHMENT_FILE_NAME, unseal
from craig.domain.access import Principal, Role
from craig.domain.attachments import Attachment, UploadValidation, new_attachment
from craig.domain.contacts import Contact
from craig.ports.errors import ObjectStoreUnavailable
from craig.ports.object_store import ObjectStore
from craig.usecases.attachments import REGISTERED_TABLES, AttachmentScanner, UploadAttachment
from craig.usecases.cases import OpenCase, RecordContact
from tests.support.apps import free_port
from tests.support.ciphers import TEST_CIPHER
from tests.support.files import png_bytes
from tests.support.raw_http import answer, raw_http

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.s3]

PNG = png_bytes()
FAILED = "cases.contact_attachment_upload_failed"


@attrs.define
class Stack:
    db: PostgresDatabase
    s3: MinioObjectStore
    clock: SystemClock = attrs.field(factory=SystemClock)

    def uow(self) -> PostgresUnitOfWork:
        return PostgresUnitOfWork(self.db, TEST_CIPHER)

    async def sql(self, query: str, **params: Any) -> list[Any]:
        async with self.db.transaction() as conn:
            return list((await conn.execute(text(query), params)).all())

    async def statuses(self) -> dict[str, str]:
        """File name (decrypted) -> object_status of every stored attachment row."""
        rows = await self.sql("SELECT id, file_name, object_status FROM contact_attachments")
        return {unseal(TEST_CIPHER, ATTACHMENT_FILE_NAME, row_id, name): status for row_id, name, status in rows}

    async def keys(self) -> set[str]:
        return {o.key async for o in self.s3.list("cases/contacts/")}

    async def contact(self) -> tuple[Principal, Contact]:
        ann = Principal(uuid.uuid4(), "Ann", Role.CASEWORKER)
        case = await OpenCase(self.uow(), self.clock)(ann, title="Doe", family_name=None, opened_at=None)
        contact = await RecordContact(self.uow(), self.clock)(
            ann, case.id, contact_type="home_visit", occurred_at=self.clock.now(), summary="ok"
        )
        return ann, contact

    async def pending(self, contact: Contact, name: str, size: int) -> Attachment:
        uow = self.uow()
        async with uow:
            row = await uow.attachments.add(
                new_attachment(
                    id=uuid.uuid4(),
                    case_id=contact.case_id,
                    contact_id=contact.id,
                    attachment_type=None,
                    file_name=name,
                    content_type="text/plain",
                    file_size=size,
                    uploaded_by=contact.created_by,
                    worker_name="Ann",
                    now=self.clock.now(),
                )
            )
            await uow.commit()
        return row

    def scanner(self, grace: timedelta, store: ObjectStore | None = None) -> AttachmentScanner:
        return AttachmentScanner(store or self.s3, self.uow, self.clock, grace, REGISTERED_TABLES)


@pytest.fixture
async def stack(pg_url: str, s3_server: Any, s3_bucket: str) -> AsyncIterator[Stack]:
    db = PostgresDatabase(pg_url)
    store = MinioObjectStore(s3_server.endpoint, s3_server.access_key, s3_server.secret_key, s3_bucket, secure=False)
    try:
        yield Stack(db, store)
    finally:
        await db.dispose()


class FailingPut(MinioObjectStore):
    """The real S3 store whose put fails: before writing, or after the bytes landed (a timeout)."""

    def __init__(self, real: MinioObjectStore, *, lands: bool) -> None:
        self.__dict__.update(real.__dict__)
        self.lands = lands

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        if self.lands:
            await super().put(key, data, content_type)
        raise ObjectStoreUnavailable("S3 put timed out")


@pytest.mark.parametrize("lands", [False, True], ids=["nothing-written", "written-then-timeout"])
async def test_a_failing_put_leaves_no_present_row_without_a_blob(stack: Stack, lands: bool) -> None:
    ann, contact = await stack.contact()
    request = stack.uow()
    upload = UploadAttachment(request, stack.uow, FailingPut(stack.s3, lands=lands), stack.clock, UploadValidation())
    async with request:  # the request's transaction, as the idempotency layer opens it
        with pytest.raises(ObjectStoreUnavailable):
            await upload(
                ann,
                contact.case_id,
                contact.id,
                file_name="p.png",
                content_type="image/png",
                body=PNG,
                attachment_type=None,
            )
        # a 5xx: the idempotency layer leaves the request's transaction without committing

    assert await stack.sql("SELECT id FROM contact_attachments") == []
    events = await stack.sql("SELECT event_type, envelope->'payload'->>'attachment_id' FROM event_outbox ORDER BY seq")
    kinds = [kind for kind, _ in events if kind.startswith("cases.contact_attachment")]
    assert kinds == ["cases.contact_attachment_uploaded", FAILED]
    assert len({attachment_id for kind, attachment_id in events if kind.startswith("cases.contact_attachment")}) == 1
    assert len(await stack.keys()) == (1 if lands else 0)

    report = await stack.scanner(timedelta(0)).run_once()  # the landed blob is an orphan: removed
    assert report.orphans_removed == (1 if lands else 0) and await stack.keys() == set()


async def test_a_scanner_pass_settles_each_pending_case(stack: Stack) -> None:
    _, contact = await stack.contact()
    stored = await stack.pending(contact, "stored.txt", 5)
    await stack.s3.put(stored.object_key, b"12345", "text/plain")
    missing = await stack.pending(contact, "missing.txt", 5)
    odd = await stack.pending(contact, "odd.txt", 5)
    await stack.s3.put(odd.object_key, b"1234567", "text/plain")
    orphan = f"cases/contacts/{contact.case_id}/{contact.id}/{uuid.uuid4()}/orphan.txt"
    await stack.s3.put(orphan, b"left over", "text/plain")
    unreachable = MinioObjectStore(f"127.0.0.1:{free_port()}", "k", "s", "craig-nowhere", secure=False)

    grace = timedelta(seconds=2)  # S3 last-modified has whole seconds: keep grace above that
    await asyncio.sleep(2.5)
    young = await stack.pending(contact, "young.txt", 5)
    young_orphan = orphan.replace("orphan.txt", "young-orphan.txt")
    await stack.s3.put(young_orphan, b"in flight", "text/plain")

    broken = await stack.scanner(grace, unreachable).run_once()
    assert broken.store_errors == 1 and broken.present == broken.missing == 0
    statuses = await stack.statuses()
    assert set(statuses.values()) == {"pending"}

    reports = await asyncio.gather(stack.scanner(grace).run_once(), stack.scanner(grace).run_once())
    assert sum(r.present for r in reports) == 1
    assert sum(r.missing for r in reports) == 1 and sum(r.mismatched for r in reports) == 1
    assert sum(r.orphans_removed for r in reports) >= 1  # deletes are idempotent: both may issue one
    statuses = await stack.statuses()
    assert statuses == {"stored.txt": "present", "odd.txt": "failed", "young.txt": "pending"}
    failures = await stack.sql(
        "SELECT envelope->'payload'->>'attachment_id' FROM event_outbox WHERE event_type = :t", t=FAILED
    )
    assert sorted(row[0] for row in failures) == sorted([str(missing.id), str(odd.id)])  # once each
    assert await stack.keys() == {stored.object_key, odd.object_key, young_orphan}
    assert young.object_key not in await stack.keys()


async def test_a_row_with_a_key_no_store_takes_holds_up_no_other(stack: Stack) -> None:
    """A row edited by hand to a key the store refuses for good stays pending, logged with its id,
    and the rows after it are settled in the same pass (the scanner stopped at it every pass)."""
    _, contact = await stack.contact()
    edited = await stack.pending(contact, "edited.txt", 5)
    await stack.sql("UPDATE contact_attachments SET object_key = 'cases//x' WHERE id = :id", id=edited.id)
    stored = await stack.pending(contact, "stored.txt", 5)
    await stack.s3.put(stored.object_key, b"12345", "text/plain")
    report = await stack.scanner(timedelta(0)).run_once()
    assert (report.present, report.store_errors) == (1, 1)
    assert await stack.statuses() == {"edited.txt": "pending", "stored.txt": "present"}


async def test_a_store_without_its_bucket_deletes_no_row_as_never_stored(stack: Stack) -> None:
    """Amazon S3 answers a HEAD with a bare 404 (no body, so no error code) for a missing bucket
    as for a missing object, and the SDK reads it as a missing object. A bucket removed while
    Craig ran then read every stale pending row as never stored and deleted it, with an
    upload_failed event each. The scanner first asks the store for its bucket. (SeaweedFS names
    the missing bucket, so a loopback server answers as S3 does.)"""
    _, contact = await stack.contact()
    row = await stack.pending(contact, "waiting.txt", 5)
    async with raw_http(lambda _method, _path: answer("404 Not Found", b"")) as server:
        wrong = MinioObjectStore(f"127.0.0.1:{server.port}", "k", "s", "craig-gone", secure=False, region="us-east-1")
        assert await wrong.head(row.object_key) is None  # the bare 404, read as a missing object
        report = await stack.scanner(timedelta(0), wrong).run_once()
    assert (report.missing, report.store_errors) == (0, 1)
    assert await stack.statuses() == {"waiting.txt": "pending"}
    assert await stack.sql("SELECT id FROM event_outbox WHERE event_type = :t", t=FAILED) == []
    assert (await stack.scanner(timedelta(0)).run_once()).missing == 1  # the right bucket: never stored
