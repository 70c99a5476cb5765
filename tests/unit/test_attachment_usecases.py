"""The two-phase upload and the reads, on the memory adapters (which pass the same contracts as
PostgreSQL): Phase 1 is durable even under held commits, a failed put is compensated once."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest

from craig.adapters.memory.object_store import MemoryObjectStore
from craig.domain.access import Role
from craig.domain.attachments import EmptyUpload, ObjectStatus, UploadContentMismatch, UploadTooLarge
from craig.domain.errors import Conflict, NotFound
from craig.ports.errors import ObjectStoreUnavailable
from craig.usecases.attachments import REGISTERED_TABLES, AttachmentScanner, OpenAttachment, UploadAttachment
from craig.usecases.attachments.failed_attachments import FailedAttachments
from tests.support.casework import World, person
from tests.support.files import EXE_HEADER, png_bytes

pytestmark = pytest.mark.unit

PNG = png_bytes()


@pytest.fixture
def world() -> World:
    return World.new()


async def _upload(use_case: UploadAttachment, owner, case, contact, name: str = "photo.png", body: bytes = PNG, **kw):  # type: ignore[no-untyped-def]
    return await use_case(
        owner, case.id, contact.id, file_name=name, content_type="image/png", body=body, attachment_type="photo", **kw
    )


async def test_upload_stores_the_blob_and_marks_the_row_present(world: World) -> None:
    ann = person()
    case = await world.case(ann)
    contact = await world.contact(ann, case)
    attachment = await _upload(world.upload(), ann, case, contact, name="../../Fotos/Küche.png")

    assert attachment.object_status is ObjectStatus.PRESENT
    assert attachment.file_name == "Küche.png" and attachment.file_size == len(PNG)
    # The file name is personal data: it is stored encrypted in the row, never in the object key.
    # ids only: the case's, the contact's and a fresh one of the object's own.
    prefix, _, object_id = attachment.object_key.rpartition("/")
    assert prefix == f"cases/contacts/{case.id}/{contact.id}" and uuid.UUID(object_id) != attachment.id
    assert attachment.uploaded_by == ann.sub and attachment.worker_name == "Ann"
    assert [row.object_status for row in await world.attachment_rows()] == [ObjectStatus.PRESENT]
    assert await world.store.head(attachment.object_key) == len(PNG)
    assert world.store.content_type(attachment.object_key) == "image/png"
    assert [t for t, _ in await world.events("cases.contact_attachment")] == ["cases.contact_attachment_uploaded"]


async def test_failed_put_is_compensated_once_and_answers_unavailable(world: World) -> None:
    ann = person()
    case = await world.case(ann)
    contact = await world.contact(ann, case)
    world.store.available = False
    with pytest.raises(ObjectStoreUnavailable):
        await _upload(world.upload(), ann, case, contact)
    assert await world.attachment_rows() == []
    events = await world.events("cases.contact_attachment")
    assert [t for t, _ in events] == ["cases.contact_attachment_uploaded", "cases.contact_attachment_upload_failed"]
    assert events[0][1]["attachment_id"] == events[1][1]["attachment_id"]
    assert "switched off" in events[1][1]["reason"]


async def test_phase_one_is_durable_even_when_the_requests_transaction_rolls_back(world: World) -> None:
    """The idempotency layer holds the request's transaction open and then rolls it back (say its
    finalize failed): Phase 1 committed on its own, so the blob that was written has a row the
    scanner can settle."""
    ann = person()
    case = await world.case(ann)
    contact = await world.contact(ann, case)
    request = world.uow()
    async with request:  # the request's transaction, left without committing (a lost response)
        attachment = await _upload(world.upload(uow=request), ann, case, contact)

    rows = await world.attachment_rows()
    assert [(r.id, r.object_status) for r in rows] == [(attachment.id, ObjectStatus.PENDING)]
    assert await world.store.head(attachment.object_key) == len(PNG)
    assert [t for t, _ in await world.events("cases.contact_attachment")] == ["cases.contact_attachment_uploaded"]


async def test_invalid_uploads_write_nothing(world: World) -> None:
    ann = person()
    case = await world.case(ann)
    contact = await world.contact(ann, case)
    before = await world.events()
    for body, error, limits in [
        (PNG, UploadTooLarge, {"max_bytes": 10}),
        (b"", EmptyUpload, {}),
        (EXE_HEADER, UploadContentMismatch, {}),
    ]:
        with pytest.raises(error):
            await _upload(world.upload(**limits), ann, case, contact, body=body)
    assert await world.attachment_rows() == []
    assert await world.events() == before
    assert [o async for o in world.store.list("")] == []


async def test_another_workers_case_or_a_foreign_contact_is_not_found(world: World) -> None:
    ann, bob = person(), person(name="Bob")
    case = await world.case(ann)
    contact = await world.contact(ann, case)
    other_case = await world.case(ann)
    with pytest.raises(NotFound):
        await _upload(world.upload(), bob, case, contact)
    with pytest.raises(NotFound):
        await _upload(world.upload(), ann, other_case, contact)
    assert await world.attachment_rows() == []
    supervisor = person(Role.SUPERVISOR)
    assert (await _upload(world.upload(), supervisor, case, contact)).worker_name == "Ann"


async def test_a_put_that_outlives_the_scanner_is_undone(world: World) -> None:
    """The scanner deleted the pending row while the put ran (the put took longer than grace):
    the blob is removed again and the client is told to retry."""
    ann = person()
    case = await world.case(ann)
    contact = await world.contact(ann, case)

    scanner = AttachmentScanner(world.store, world.uow, world.clock, timedelta(hours=1), REGISTERED_TABLES)

    class SlowStore(MemoryObjectStore):
        async def put(self, key: str, data: bytes, content_type: str) -> None:
            world.clock.advance(timedelta(hours=2))
            assert (await scanner.run_once()).missing == 1  # HEAD before the bytes landed: 404
            await super().put(key, data, content_type)

    store = SlowStore(clock=world.clock)
    with pytest.raises(ObjectStoreUnavailable):
        await _upload(world.upload(store=store), ann, case, contact)
    assert [o async for o in store.list("")] == []
    assert await world.attachment_rows() == []
    assert [t for t, _ in await world.events("cases.contact_attachment")] == [
        "cases.contact_attachment_uploaded",
        "cases.contact_attachment_upload_failed",
    ]


async def test_download_only_when_present_and_stored(world: World) -> None:
    ann = person()
    case = await world.case(ann)
    contact = await world.contact(ann, case)
    attachment = await _upload(world.upload(), ann, case, contact)
    opened, download = await OpenAttachment(world.uow(), world.store)(ann, case.id, contact.id, attachment.id)
    assert download.size == len(PNG) and b"".join([c async for c in download.chunks]) == PNG
    assert opened.id == attachment.id

    with pytest.raises(NotFound):
        await OpenAttachment(world.uow(), world.store)(person(), case.id, contact.id, attachment.id)
    with pytest.raises(NotFound):
        await OpenAttachment(world.uow(), world.store)(ann, case.id, contact.id, uuid.uuid4())
    await world.store.delete(attachment.object_key)
    with pytest.raises(NotFound):
        await OpenAttachment(world.uow(), world.store)(ann, case.id, contact.id, attachment.id)


async def test_a_retry_with_the_same_id_resumes_instead_of_duplicating(world: World) -> None:
    """The first attempt's response was lost after Phase 1 (its held commit rolled back): the
    retry completes the pending row; a further retry returns the finished attachment."""
    ann = person()
    case = await world.case(ann)
    contact = await world.contact(ann, case)
    retry_id = uuid.uuid4()
    request = world.uow()
    async with request:
        first = await _upload(world.upload(uow=request), ann, case, contact, attachment_id=retry_id)
    assert [r.object_status for r in await world.attachment_rows()] == [ObjectStatus.PENDING]

    second = await _upload(world.upload(), ann, case, contact, attachment_id=retry_id)
    third = await _upload(world.upload(), ann, case, contact, attachment_id=retry_id)
    assert first.id == second.id == third.id == retry_id
    assert third.object_status is ObjectStatus.PRESENT
    assert [(r.id, r.object_status) for r in await world.attachment_rows()] == [(retry_id, ObjectStatus.PRESENT)]
    assert [o.key async for o in world.store.list("")] == [first.object_key]
    assert [t for t, _ in await world.events("cases.contact_attachment")] == ["cases.contact_attachment_uploaded"]


async def test_a_concurrent_attempt_that_settled_first_is_not_undone(world: World) -> None:
    ann = person()
    case = await world.case(ann)
    contact = await world.contact(ann, case)

    class RacingStore(MemoryObjectStore):
        async def put(self, key: str, data: bytes, content_type: str) -> None:
            await super().put(key, data, content_type)
            row = next(r for r in await world.attachment_rows() if r.object_key == key)
            uow = world.uow()  # the other attempt promotes the row first
            async with uow:
                assert await uow.attachments.mark_present(row.id)
                await uow.commit()

    store = RacingStore(clock=world.clock)
    attachment = await _upload(world.upload(store=store), ann, case, contact)
    assert attachment.object_status is ObjectStatus.PRESENT
    assert await store.head(attachment.object_key) == len(PNG)  # not deleted


async def test_a_failed_row_is_a_conflict_for_its_retries(world: World) -> None:
    ann = person()
    case = await world.case(ann)
    contact = await world.contact(ann, case)
    retry_id = uuid.uuid4()
    request = world.uow()
    async with request:
        await _upload(world.upload(uow=request), ann, case, contact, attachment_id=retry_id)
    uow = world.uow()
    async with uow:
        assert await uow.attachments.mark_failed(retry_id)
        await uow.commit()
    with pytest.raises(Conflict):
        await _upload(world.upload(), ann, case, contact, attachment_id=retry_id)
    # Once an operator discarded it, the same retry uploads again, under the same id.
    discarded = [d async for d in FailedAttachments(world.store, world.uow, REGISTERED_TABLES).discard([retry_id])]
    assert [d.attachment.row.id for d in discarded] == [retry_id]
    again = await _upload(world.upload(), ann, case, contact, attachment_id=retry_id)
    assert again.id == retry_id and again.object_status is ObjectStatus.PRESENT
    assert again.object_key != discarded[0].attachment.row.object_key


class HangingPut(MemoryObjectStore):
    """A put that never returns (a stuck SDK call) until its task is cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.started = asyncio.Event()

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        self.started.set()
        await asyncio.Event().wait()


async def test_a_put_cancelled_with_its_request_is_compensated(world: World) -> None:
    ann = person()
    case = await world.case(ann)
    contact = await world.contact(ann, case)
    store = HangingPut()
    upload = asyncio.create_task(_upload(world.upload(store=store), ann, case, contact))
    await asyncio.wait_for(store.started.wait(), 30)
    assert [r.object_status for r in await world.attachment_rows()] == [ObjectStatus.PENDING]
    upload.cancel()
    with pytest.raises(asyncio.CancelledError):
        await upload
    assert await world.attachment_rows() == []  # not left for the scanner
    kinds = [t for t, _ in await world.events("cases.contact_attachment")]
    assert kinds == ["cases.contact_attachment_uploaded", "cases.contact_attachment_upload_failed"]


class SlowCompensation(MemoryObjectStore):
    """A put that fails; the test cancels the upload again while it compensates."""

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        raise ValueError("an SDK bug")


async def test_a_compensation_runs_to_its_end_even_when_cancelled_meanwhile(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann = person()
    case = await world.case(ann)
    contact = await world.contact(ann, case)
    use_case = world.upload(store=SlowCompensation())
    compensating = asyncio.Event()
    original = UploadAttachment._compensate

    async def slow(self: UploadAttachment, *args: object) -> None:
        compensating.set()
        await asyncio.sleep(0.2)
        await original(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(UploadAttachment, "_compensate", slow)
    upload = asyncio.create_task(_upload(use_case, ann, case, contact))
    await asyncio.wait_for(compensating.wait(), 30)
    upload.cancel()
    with pytest.raises(asyncio.CancelledError):
        await upload
    assert await world.attachment_rows() == []
    assert [t for t, _ in await world.events("cases.contact_attachment")][
        -1
    ] == "cases.contact_attachment_upload_failed"
