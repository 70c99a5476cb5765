"""PostgreSQL adapter of the attachment repository (``contact_attachments``).

``file_name`` and ``attachment_type`` are stored as ciphertext."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import attrs
from sqlalchemy import bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY, TEXT

from craig.adapters.postgres.driver import Row
from craig.adapters.postgres.session import PostgresSession
from craig.adapters.sealed_fields import (
    ATTACHMENT_FILE_NAME,
    ATTACHMENT_TYPE,
    seal,
    seal_optional,
    unseal,
    unseal_optional,
)
from craig.domain.attachments import Attachment, ObjectStatus, attachment_key
from craig.domain.keyset import Keyset, KeysetPage, keyset_page
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import AttachmentRepository
from craig.ports.cipher import FieldCipher
from craig.ports.object_rows import PendingObject, PendingStats

_COLUMNS = """id, contact_id, attachment_type, file_name, content_type, file_size, object_key,
    object_status, uploaded_by, worker_name, created_at"""
# created_at comes from the database clock: the scanner's grace is measured on it.
_INSERT = text(
    f"""
    INSERT INTO contact_attachments ({_COLUMNS})
    VALUES (:id, :contact_id, :attachment_type, :file_name, :content_type, :file_size, :object_key,
            :object_status, :uploaded_by, :worker_name, now())
    RETURNING created_at
    """
)
_GET = text(f"SELECT {_COLUMNS} FROM contact_attachments WHERE id = :id AND contact_id = :contact_id")
_LIST = text(
    f"""
    SELECT {_COLUMNS} FROM contact_attachments WHERE contact_id = :contact_id
     ORDER BY created_at, id LIMIT :limit OFFSET :offset
    """
)
_COUNT = text("SELECT count(*) FROM contact_attachments WHERE contact_id = :contact_id")
_PAGE = (
    f"SELECT {_COLUMNS} FROM contact_attachments WHERE contact_id = :contact_id {{after}} "
    "ORDER BY created_at, id LIMIT :limit"
)
_PENDING_ROWS = """
    SELECT id, contact_id, object_key, file_size, created_at FROM contact_attachments
     WHERE object_status = 'pending' AND created_at < now() - make_interval(secs => :grace) {after}
     ORDER BY created_at, id LIMIT :limit
    """
# Two statements rather than one with "cursor IS NULL OR ...": once asyncpg's prepared statement
# runs on a generic plan, such an OR is a filter, and every resumed pass would read the index
# from the oldest pending row up to the cursor.
_PENDING = text(_PENDING_ROWS.format(after=""))
_PENDING_AFTER = text(_PENDING_ROWS.format(after="AND (created_at, id) > (:after_at, :after_id)"))
_SET_STATUS = text(
    """
    UPDATE contact_attachments SET object_status = :status
     WHERE id = :id AND object_status = 'pending'
    RETURNING id
    """
)
_DELETE_PENDING = text("DELETE FROM contact_attachments WHERE id = :id AND object_status = 'pending' RETURNING id")
_SCANNED = "a.id, a.contact_id, a.object_key, a.file_size, a.created_at, c.case_id"
# In the order of the partial index on failed rows (migration 0021); a row's contact always
# exists (a foreign key).
_FAILED = text(
    f"""
    SELECT {_SCANNED} FROM contact_attachments a JOIN contacts c ON c.id = a.contact_id
     WHERE a.object_status = 'failed' ORDER BY a.created_at, a.id LIMIT :limit
    """
)
_FAILED_ROW = text(
    f"""
    SELECT {_SCANNED} FROM contact_attachments a JOIN contacts c ON c.id = a.contact_id
     WHERE a.id = :id AND a.object_status = 'failed'
    """
)
_DELETE_FAILED = text(
    f"""
    DELETE FROM contact_attachments a USING contacts c
     WHERE a.id = :id AND a.object_status = 'failed' AND c.id = a.contact_id
    RETURNING {_SCANNED}
    """
)
_KNOWN = text("SELECT object_key FROM contact_attachments WHERE object_key = ANY(:keys)").bindparams(
    bindparam("keys", type_=ARRAY(TEXT))
)
_STATS = text(
    """
    SELECT count(*) AS pending, min(created_at) AS oldest, now() AS db_now,
           (SELECT count(*) FROM contact_attachments WHERE object_status = 'failed') AS failed
      FROM contact_attachments WHERE object_status = 'pending'
    """
)


def _scanned(row: Row) -> PendingObject:
    return PendingObject(
        row["id"], row["contact_id"], row["object_key"], row["file_size"], row["created_at"], row["case_id"]
    )


def _attachment(row: Row, cipher: FieldCipher) -> Attachment:
    return Attachment(
        id=row["id"],
        contact_id=row["contact_id"],
        attachment_type=unseal_optional(cipher, ATTACHMENT_TYPE, row["id"], row["attachment_type"]),
        file_name=unseal(cipher, ATTACHMENT_FILE_NAME, row["id"], row["file_name"]),
        content_type=row["content_type"],
        file_size=row["file_size"],
        object_key=row["object_key"],
        object_status=ObjectStatus(row["object_status"]),
        uploaded_by=row["uploaded_by"],
        worker_name=row["worker_name"],
        created_at=row["created_at"],
    )


class PostgresAttachmentRepository(AttachmentRepository):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    async def add(self, attachment: Attachment) -> Attachment:
        params = {
            "id": attachment.id,
            "contact_id": attachment.contact_id,
            "attachment_type": seal_optional(
                self.session.cipher, ATTACHMENT_TYPE, attachment.id, attachment.attachment_type
            ),
            "file_name": seal(self.session.cipher, ATTACHMENT_FILE_NAME, attachment.id, attachment.file_name),
            "content_type": attachment.content_type,
            "file_size": attachment.file_size,
            "object_key": attachment.object_key,
            "object_status": str(attachment.object_status),
            "uploaded_by": attachment.uploaded_by,
            "worker_name": attachment.worker_name,
        }
        created_at = (await self.session.execute(_INSERT, params)).scalar_one()
        return attrs.evolve(attachment, created_at=created_at)

    async def get(self, contact_id: UUID, attachment_id: UUID) -> Attachment | None:
        result = await self.session.execute(_GET, {"id": attachment_id, "contact_id": contact_id})
        row = result.mappings().first()
        return _attachment(row, self.session.cipher) if row else None

    async def page_for_contact(self, contact_id: UUID, keyset: Keyset) -> KeysetPage[Attachment]:
        params: dict[str, Any] = {"contact_id": contact_id, "limit": keyset.limit + 1}
        bound = ""
        if keyset.after is not None:
            bound = "AND (created_at, id) > (:after_at, :after_id)"
            params["after_at"], params["after_id"] = keyset.after
        rows = (await self.session.execute(text(_PAGE.format(after=bound)), params)).mappings()
        items = [_attachment(row, self.session.cipher) for row in rows]
        return keyset_page(items, keyset, attachment_key)

    async def list_for_contact(self, contact_id: UUID, page: PageRequest) -> Page[Attachment]:
        conn = await self.session.connection()
        total = (await conn.execute(_COUNT, {"contact_id": contact_id})).scalar_one()
        rows = (
            await conn.execute(_LIST, {"contact_id": contact_id, "limit": page.per_page, "offset": page.offset})
        ).mappings()
        items = [_attachment(row, self.session.cipher) for row in rows]
        return Page(items=items, page=page.page, per_page=page.per_page, total=total)

    # --- the scanner's view (ObjectRows) ------------------------------------------------------
    async def pending_older_than(
        self, grace: timedelta, limit: int, after: tuple[datetime, UUID] | None = None
    ) -> Sequence[PendingObject]:
        params: dict[str, Any] = {"grace": grace.total_seconds(), "limit": limit}
        if after is not None:
            params["after_at"], params["after_id"] = after
        result = await self.session.execute(_PENDING if after is None else _PENDING_AFTER, params)
        return [
            PendingObject(r["id"], r["contact_id"], r["object_key"], r["file_size"], r["created_at"])
            for r in result.mappings()
        ]

    async def failed_rows(self, limit: int) -> Sequence[PendingObject]:
        return [_scanned(r) for r in (await self.session.execute(_FAILED, {"limit": limit})).mappings()]

    async def failed_row(self, row_id: UUID) -> PendingObject | None:
        row = (await self.session.execute(_FAILED_ROW, {"id": row_id})).mappings().first()
        return None if row is None else _scanned(row)

    async def delete_failed(self, row_id: UUID) -> PendingObject | None:
        row = (await self.session.execute(_DELETE_FAILED, {"id": row_id})).mappings().first()
        return None if row is None else _scanned(row)

    async def _set_status(self, row_id: UUID, status: ObjectStatus) -> bool:
        result = await self.session.execute(_SET_STATUS, {"id": row_id, "status": str(status)})
        return result.first() is not None

    async def mark_present(self, row_id: UUID) -> bool:
        return await self._set_status(row_id, ObjectStatus.PRESENT)

    async def mark_failed(self, row_id: UUID) -> bool:
        return await self._set_status(row_id, ObjectStatus.FAILED)

    async def delete_pending(self, row_id: UUID) -> bool:
        return (await self.session.execute(_DELETE_PENDING, {"id": row_id})).first() is not None

    async def known_object_keys(self, keys: Sequence[str]) -> set[str]:
        if not keys:
            return set()
        result = await self.session.execute(_KNOWN, {"keys": list(keys)})
        return {row[0] for row in result}

    async def pending_stats(self) -> PendingStats:
        row = (await self.session.execute(_STATS)).mappings().one()
        return PendingStats(
            pending=row["pending"], oldest_pending_created_at=row["oldest"], now=row["db_now"], failed=row["failed"]
        )
