"""Contract of AttachmentRepository (and its ObjectRows view for the scanner) on every adapter."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from craig.domain.attachments import Attachment, ObjectStatus, new_attachment
from craig.domain.cases import new_case
from craig.domain.contacts import Contact, new_contact
from craig.domain.pages import PageRequest
from craig.ports.errors import ConstraintViolation
from craig.ports.unit_of_work import UnitOfWork
from tests.support.backends import Backend

pytestmark = pytest.mark.contract

T0 = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)


async def a_contact(uow: UnitOfWork) -> Contact:
    case = new_case(id=uuid.uuid4(), title="Doe", family_name=None, opened_at=T0, created_by=uuid.uuid4(), now=T0)
    contact = new_contact(
        id=uuid.uuid4(),
        case_id=case.id,
        contact_type="phone_call",
        occurred_at=T0,
        summary="Called the school.",
        created_by=case.created_by,
        worker_name="Ann",
        now=T0,
    )
    async with uow:
        await uow.cases.add(case)
        await uow.contacts.add(contact)
        await uow.commit()
    return contact


def draft(contact: Contact, name: str = "scan.pdf", size: int = 10) -> Attachment:
    return new_attachment(
        id=uuid.uuid4(),
        case_id=contact.case_id,
        contact_id=contact.id,
        attachment_type="report",
        file_name=name,
        content_type="application/pdf",
        file_size=size,
        uploaded_by=contact.created_by,
        worker_name="Ann",
        now=T0 - timedelta(days=365),  # the database clock decides created_at
    )


async def add(uow: UnitOfWork, attachment: Attachment, backend: Backend | None = None) -> Attachment:
    if backend is not None:  # distinct creation times, on the fake clock too
        await backend.sleep(0.002)
    async with uow:
        stored = await uow.attachments.add(attachment)
        await uow.commit()
    return stored


async def test_add_get_list(backend: Backend) -> None:
    uow = backend.uow()
    contact, other = await a_contact(uow), await a_contact(uow)
    first = await add(uow, draft(contact, "a.pdf"))
    await backend.sleep(0.01)
    second = await add(uow, draft(contact, "b.pdf"))
    await add(uow, draft(other))
    assert first.created_at > T0 - timedelta(days=300)  # the database clock, not the draft's
    assert second.created_at > first.created_at and first.object_status is ObjectStatus.PENDING
    assert attrs.evolve(first, created_at=T0) == attrs.evolve(
        draft(contact, "a.pdf"), id=first.id, object_key=first.object_key, created_at=T0
    )
    async with uow:
        assert await uow.attachments.get(contact.id, first.id) == first
        assert await uow.attachments.get(other.id, first.id) is None
        page = await uow.attachments.list_for_contact(contact.id, PageRequest(per_page=1, page=2))
        assert page.total == 2 and [a.id for a in page.items] == [second.id]


async def test_keys_ids_and_contacts_are_constrained(backend: Backend) -> None:
    uow = backend.uow()
    contact = await a_contact(uow)
    stored = await add(uow, draft(contact))
    for clash in (
        attrs.evolve(draft(contact), object_key=stored.object_key),
        attrs.evolve(draft(contact), id=stored.id),
        attrs.evolve(draft(contact), contact_id=uuid.uuid4()),
    ):
        with pytest.raises(ConstraintViolation):
            async with uow:
                await uow.attachments.add(clash)


async def test_status_transitions_only_from_pending(backend: Backend) -> None:
    uow = backend.uow()
    contact = await a_contact(uow)
    present, failed, gone = [await add(uow, draft(contact, n)) for n in ("p.pdf", "f.pdf", "g.pdf")]
    async with uow:
        rows = uow.attachments
        assert await rows.mark_present(present.id) and not await rows.mark_present(present.id)
        assert await rows.mark_failed(failed.id) and not await rows.mark_present(failed.id)
        assert not await rows.delete_pending(present.id) and not await rows.delete_pending(failed.id)
        assert await rows.delete_pending(gone.id) and not await rows.delete_pending(gone.id)
        assert not await rows.mark_present(uuid.uuid4())
        await uow.commit()
    async with uow:
        statuses = {
            a.file_name: a.object_status
            for a in (await uow.attachments.list_for_contact(contact.id, PageRequest())).items
        }
    assert statuses == {"p.pdf": ObjectStatus.PRESENT, "f.pdf": ObjectStatus.FAILED}


async def test_pending_rows_older_than_grace_and_stats(backend: Backend) -> None:
    uow = backend.uow()
    contact = await a_contact(uow)
    old = [await add(uow, draft(contact, f"old{i}.pdf"), backend) for i in range(3)]
    done = await add(uow, draft(contact, "done.pdf"))
    odd = await add(uow, draft(contact, "odd.pdf"))
    async with uow:
        await uow.attachments.mark_present(done.id)
        await uow.attachments.mark_failed(odd.id)
        await uow.commit()
    await backend.sleep(0.3)
    young = await add(uow, draft(contact, "young.pdf"))
    await backend.sleep(0.01)
    async with uow:
        due = await uow.attachments.pending_older_than(timedelta(seconds=0.2), limit=2)
        assert [p.id for p in due] == [old[0].id, old[1].id]
        assert (due[0].object_key, due[0].size, due[0].parent_id) == (old[0].object_key, 10, contact.id)
        assert len(await uow.attachments.pending_older_than(timedelta(0), limit=10)) == 4
        # After a row: the ones after it in (created_at, id) order, as the scanner resumes.
        rest = await uow.attachments.pending_older_than(timedelta(0), 10, after=(due[1].created_at, due[1].id))
        assert [p.id for p in rest] == [old[2].id, young.id]
        stats = await uow.attachments.pending_stats()
        assert stats.pending == 4 and stats.oldest_pending_created_at == old[0].created_at
        assert stats.failed == 1
        assert stats.now >= young.created_at
        known = await uow.attachments.known_object_keys([done.object_key, young.object_key, "cases/contacts/x"])
        assert known == {done.object_key, young.object_key}
        assert await uow.attachments.known_object_keys([]) == set()


async def test_concurrent_deletes_of_one_pending_row_succeed_once(backend: Backend) -> None:
    setup = backend.uow()
    contact = await a_contact(setup)
    row = await add(setup, draft(contact))

    async def delete() -> bool:
        uow = backend.uow()
        async with uow:
            deleted = await uow.attachments.delete_pending(row.id)
            await asyncio.sleep(0.05)
            await uow.commit()
        return deleted

    assert sorted(await asyncio.gather(*(delete() for _ in range(4)))) == [False, False, False, True]


async def test_failed_rows_are_listed_oldest_first_and_deleted_once(backend: Backend) -> None:
    uow = backend.uow()
    contact = await a_contact(uow)
    failed = [await add(uow, draft(contact, f"f{i}.pdf"), backend) for i in range(3)]
    pending = await add(uow, draft(contact, "p.pdf"), backend)
    present = await add(uow, draft(contact, "ok.pdf"), backend)
    async with uow:
        for row in failed:
            assert await uow.attachments.mark_failed(row.id)
        assert await uow.attachments.mark_present(present.id)
        await uow.commit()
    async with uow:
        listed = await uow.attachments.failed_rows(2)
    assert [r.id for r in listed] == [failed[0].id, failed[1].id]
    assert (listed[0].object_key, listed[0].size, listed[0].parent_id) == (failed[0].object_key, 10, contact.id)
    assert listed[0].case_id == contact.case_id
    async with uow:
        assert await uow.attachments.failed_row(failed[0].id) == listed[0]
        for not_failed in (pending.id, present.id, uuid.uuid4()):
            assert await uow.attachments.failed_row(not_failed) is None

    async def delete(row_id: uuid.UUID) -> object:
        uow = backend.uow()
        async with uow:
            deleted = await uow.attachments.delete_failed(row_id)
            await asyncio.sleep(0.05)
            await uow.commit()
        return deleted

    outcomes = await asyncio.gather(*(delete(failed[0].id) for _ in range(4)))
    [won] = [o for o in outcomes if o is not None]
    assert won == listed[0]
    for untouched in (pending.id, present.id, uuid.uuid4()):
        assert await delete(untouched) is None
    async with uow:
        assert [r.id for r in await uow.attachments.failed_rows(10)] == [failed[1].id, failed[2].id]
        stats = await uow.attachments.pending_stats()
        assert stats.failed == 2 and stats.pending == 1
        assert await uow.attachments.get(contact.id, present.id) is not None
