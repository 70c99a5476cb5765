"""Memory adapter of the attachment repository (the ``contact_attachments`` table): ``file_name``
and ``attachment_type`` are stored as ciphertext, as in PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from uuid import UUID

import attrs

from craig.adapters.memory.contacts import CONTACTS
from craig.adapters.memory.session import MemorySession
from craig.adapters.sealed_fields import (
    ATTACHMENT_FILE_NAME,
    ATTACHMENT_TYPE,
    seal,
    seal_optional,
    unseal,
    unseal_optional,
)
from craig.domain.attachments import Attachment, ObjectStatus, attachment_key
from craig.domain.keyset import Keyset, KeysetPage, after, keyset_page
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import AttachmentRepository
from craig.ports.errors import ConstraintViolation
from craig.ports.object_rows import PendingObject, PendingStats

ATTACHMENTS = "contact_attachments"


@attrs.frozen(kw_only=True)
class AttachmentRow:
    """The stored row: ``file_name`` and ``attachment_type`` are ciphertext."""

    id: UUID
    contact_id: UUID
    attachment_type: str | None
    file_name: str
    content_type: str
    file_size: int
    object_key: str
    object_status: ObjectStatus
    uploaded_by: UUID
    worker_name: str
    created_at: datetime


def _scanned(row: AttachmentRow) -> PendingObject:
    return PendingObject(row.id, row.contact_id, row.object_key, row.file_size, row.created_at)


class MemoryAttachmentRepository(AttachmentRepository):
    def __init__(self, session: MemorySession) -> None:
        self.session = session

    async def _rows(self, status: ObjectStatus | None = None) -> list[AttachmentRow]:
        return (await self.session.tx()).select(ATTACHMENTS, lambda row: status is None or row.object_status is status)

    def _attachment(self, row: AttachmentRow) -> Attachment:
        cipher = self.session.cipher
        return Attachment(
            id=row.id,
            contact_id=row.contact_id,
            attachment_type=unseal_optional(cipher, ATTACHMENT_TYPE, row.id, row.attachment_type),
            file_name=unseal(cipher, ATTACHMENT_FILE_NAME, row.id, row.file_name),
            content_type=row.content_type,
            file_size=row.file_size,
            object_key=row.object_key,
            object_status=row.object_status,
            uploaded_by=row.uploaded_by,
            worker_name=row.worker_name,
            created_at=row.created_at,
        )

    async def add(self, attachment: Attachment) -> Attachment:
        stored = attrs.evolve(attachment, created_at=self.session.db.now())
        if (await self.session.tx()).get(CONTACTS, stored.contact_id) is None:
            raise ConstraintViolation("contact_attachments_contact_id_fkey", str(stored.contact_id))
        if (await self.session.tx()).get(ATTACHMENTS, stored.id) is not None:
            raise ConstraintViolation("contact_attachments_pkey", str(stored.id))
        if any(row.object_key == stored.object_key for row in await self._rows()):
            raise ConstraintViolation("contact_attachments_object_key_key", stored.object_key)
        cipher = self.session.cipher
        row = AttachmentRow(
            id=stored.id,
            contact_id=stored.contact_id,
            attachment_type=seal_optional(cipher, ATTACHMENT_TYPE, stored.id, stored.attachment_type),
            file_name=seal(cipher, ATTACHMENT_FILE_NAME, stored.id, stored.file_name),
            content_type=stored.content_type,
            file_size=stored.file_size,
            object_key=stored.object_key,
            object_status=stored.object_status,
            uploaded_by=stored.uploaded_by,
            worker_name=stored.worker_name,
            created_at=stored.created_at,
        )
        (await self.session.tx()).put(ATTACHMENTS, stored.id, row)
        return stored

    async def get(self, contact_id: UUID, attachment_id: UUID) -> Attachment | None:
        row: AttachmentRow | None = (await self.session.tx()).get(ATTACHMENTS, attachment_id)
        return self._attachment(row) if row is not None and row.contact_id == contact_id else None

    async def list_for_contact(self, contact_id: UUID, page: PageRequest) -> Page[Attachment]:
        rows: list[AttachmentRow] = sorted(
            (await self.session.tx()).select(ATTACHMENTS, lambda row: row.contact_id == contact_id),
            key=lambda row: (row.created_at, row.id),
        )
        items = [self._attachment(row) for row in rows[page.offset : page.offset + page.per_page]]
        return Page(items=items, page=page.page, per_page=page.per_page, total=len(rows))

    async def page_for_contact(self, contact_id: UUID, keyset: Keyset) -> KeysetPage[Attachment]:
        rows: list[AttachmentRow] = sorted(
            (await self.session.tx()).select(
                ATTACHMENTS,
                lambda row: row.contact_id == contact_id and after((row.created_at, row.id), keyset, (False, False)),
            ),
            key=lambda row: (row.created_at, row.id),
        )
        return keyset_page([self._attachment(row) for row in rows[: keyset.limit + 1]], keyset, attachment_key)

    # --- the scanner's view (ObjectRows) ------------------------------------------------------
    async def pending_older_than(
        self, grace: timedelta, limit: int, after: tuple[datetime, UUID] | None = None
    ) -> Sequence[PendingObject]:
        cutoff = self.session.db.now() - grace
        rows = sorted(
            (
                row
                for row in await self._rows(ObjectStatus.PENDING)
                if row.created_at < cutoff and (after is None or (row.created_at, row.id) > after)
            ),
            key=lambda row: (row.created_at, row.id),
        )
        return [_scanned(row) for row in rows[:limit]]

    async def _pending(self, row_id: UUID) -> AttachmentRow | None:
        row: AttachmentRow | None = (await self.session.tx()).get(ATTACHMENTS, row_id)
        return row if row is not None and row.object_status is ObjectStatus.PENDING else None

    async def _set_status(self, row_id: UUID, status: ObjectStatus) -> bool:
        row = await self._pending(row_id)
        if row is None:
            return False
        (await self.session.tx()).put(ATTACHMENTS, row_id, attrs.evolve(row, object_status=status))
        return True

    async def mark_present(self, row_id: UUID) -> bool:
        return await self._set_status(row_id, ObjectStatus.PRESENT)

    async def mark_failed(self, row_id: UUID) -> bool:
        return await self._set_status(row_id, ObjectStatus.FAILED)

    async def delete_pending(self, row_id: UUID) -> bool:
        return await self._pending(row_id) is not None and (await self.session.tx()).delete(ATTACHMENTS, row_id)

    async def failed_rows(self, limit: int) -> Sequence[PendingObject]:
        rows = sorted(await self._rows(ObjectStatus.FAILED), key=lambda row: (row.created_at, row.id))
        return [await self._with_case(row) for row in rows[:limit]]

    async def failed_row(self, row_id: UUID) -> PendingObject | None:
        row: AttachmentRow | None = (await self.session.tx()).get(ATTACHMENTS, row_id)
        return None if row is None or row.object_status is not ObjectStatus.FAILED else await self._with_case(row)

    async def delete_failed(self, row_id: UUID) -> PendingObject | None:
        tx = await self.session.tx()
        row: AttachmentRow | None = tx.get(ATTACHMENTS, row_id)
        if row is None or row.object_status is not ObjectStatus.FAILED:
            return None
        found = await self._with_case(row)
        return found if tx.delete(ATTACHMENTS, row_id) else None

    async def _with_case(self, row: AttachmentRow) -> PendingObject:
        contact = (await self.session.tx()).get(CONTACTS, row.contact_id)  # always there: a foreign key
        return attrs.evolve(_scanned(row), case_id=contact.case_id)

    async def known_object_keys(self, keys: Sequence[str]) -> set[str]:
        wanted = set(keys)
        return {row.object_key for row in await self._rows() if row.object_key in wanted}

    async def pending_stats(self) -> PendingStats:
        pending = await self._rows(ObjectStatus.PENDING)
        return PendingStats(
            pending=len(pending),
            oldest_pending_created_at=min((row.created_at for row in pending), default=None),
            now=self.session.db.now(),
            failed=len(await self._rows(ObjectStatus.FAILED)),
        )
