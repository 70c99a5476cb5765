"""Use case: an operator lists the attachments the scanner failed, and discards them.

The scanner marks a row ``failed`` when its stored object is not what the upload declared
(another size): the row and the object are kept, never served, and counted
(``craig_attachments_failed``). Neither can be trusted, so there is nothing to repair: an
operator looks at them (``craig attachments failed``), then discards them
(``craig attachments discard --id``), and the case worker uploads the file again. Discarding
deletes the object, then the row, recorded in the audit trail in the same transaction; the
``*.upload_failed`` event was staged when the row failed, so none is staged again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Protocol
from uuid import UUID

import attrs
import structlog

from craig.domain.audit import AuditAction
from craig.ports.errors import PortError
from craig.ports.object_rows import PendingObject
from craig.ports.object_store import ObjectStore
from craig.usecases.attachments.scan_attachments import AttachmentScannerWork, ScannedTable
from craig.usecases.audit.record import AuditWork, operator_entry

log = structlog.get_logger(__name__)


class FailedAttachmentsWork(AttachmentScannerWork, AuditWork, Protocol):
    """The unit of work :class:`FailedAttachments` uses."""


@attrs.frozen
class FailedAttachment:
    """A failed row and the table it is in."""

    table: str
    row: PendingObject


@attrs.frozen
class Discarded:
    """A failed row that was deleted; ``object_left`` is None once its object was deleted too,
    else why it was not (the scanner's orphan sweep removes it on a later pass)."""

    attachment: FailedAttachment
    object_left: str | None


class FailedAttachments:
    def __init__(
        self,
        object_store: ObjectStore,
        uow_factory: Callable[[], FailedAttachmentsWork],
        tables: Sequence[ScannedTable],
    ) -> None:
        self.object_store = object_store
        self.uow_factory = uow_factory
        self.tables = tables

    async def failed(self, limit: int) -> list[FailedAttachment]:
        """Up to ``limit`` failed rows over every registered table, oldest first."""
        found: list[FailedAttachment] = []
        for table in self.tables:
            uow = self.uow_factory()
            async with uow:
                found += [FailedAttachment(table.name, row) for row in await table.rows(uow).failed_rows(limit)]
        return sorted(found, key=lambda f: (f.row.created_at, f.row.id))[:limit]

    async def discard(self, row_ids: Sequence[UUID]) -> AsyncIterator[Discarded]:
        """Discard each of ``row_ids`` that is a failed row: its object is deleted first, then
        the row, with an ``attachment_discard`` audit entry in the same transaction. Each is
        yielded as soon as its row's transaction commits, so a caller stopped half way (an error,
        Ctrl-C) has reported every row it deleted; one stopped before that finds the row still
        listed (without its object, which is harmless: a failed row is never served). An id that
        is not a failed row (unknown, discarded already, or ``pending`` or ``present``, whose
        object is never touched) is left alone and not yielded. Of two operators discarding one
        row at once, one deletes and records it.

        An object the store would not delete (down, slow, or refusing) is left to the scanner's
        orphan sweep once its row is gone; after the first such failure the store is not called
        again for this discard, so a hung store costs one timeout, not one per row."""
        store_failed: str | None = None
        for row_id in sorted(set(row_ids), key=str):
            for table in self.tables:
                found = await self._failed_row(table, row_id)
                if found is None:
                    continue
                if store_failed is None:
                    left = store_failed = await self._remove_object(table, found)
                else:
                    left = f"not tried after an earlier failure: {store_failed}"
                row = await self._delete(table, row_id)
                if row is not None:  # else another operator discarded it meanwhile
                    yield Discarded(FailedAttachment(table.name, row), left)
                break

    async def _failed_row(self, table: ScannedTable, row_id: UUID) -> PendingObject | None:
        uow = self.uow_factory()
        async with uow:
            return await table.rows(uow).failed_row(row_id)

    async def _delete(self, table: ScannedTable, row_id: UUID) -> PendingObject | None:
        uow = self.uow_factory()
        async with uow:
            row = await table.rows(uow).delete_failed(row_id)
            if row is None:
                return None
            entry = operator_entry(
                AuditAction.ATTACHMENT_DISCARD,
                table.resource_type,
                row.id,
                resource_ids=[row.parent_id],
                case_id=row.case_id,
            )
            await uow.audit.append([entry])
            await uow.commit()
        return row

    async def _remove_object(self, table: ScannedTable, row: PendingObject) -> str | None:
        """None once the object is deleted; else why it was left for the orphan sweep."""
        try:
            await self.object_store.delete(row.object_key)
        except PortError as error:
            log.warning(
                "attachments: object not deleted; the scanner's orphan sweep removes it",
                table=table.name,
                row_id=str(row.id),
                error=str(error),
            )
            return str(error) or type(error).__name__
        return None
