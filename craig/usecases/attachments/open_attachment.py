"""Use case: download an attachment.

Only a ``present`` attachment is served: a ``pending`` one may still be writing and a
``failed`` one did not pass verification, and both answer 404. The row is read in a short
block (a refusal is recorded as ``denied``), the blob is opened with no transaction held, and
only then is the download recorded in the audit trail: a download the object store cannot serve
leaves no ``download`` entry, and one whose entry cannot be written is not served (the blob is
closed unread). The blob then streams with no database transaction open.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

import structlog

from craig.domain.access import Principal
from craig.domain.attachments import Attachment
from craig.domain.audit import AuditAction
from craig.domain.constants import ATTACHMENT_DOWNLOAD_CHUNK_BYTES
from craig.domain.errors import NotFound
from craig.ports.cases import HasAttachments, HasCases, HasContacts
from craig.ports.object_store import Download, ObjectStore
from craig.usecases.attachments.get_attachment import visible_attachment
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import ATTACHMENT

log = structlog.get_logger(__name__)


class OpenAttachmentWork(AuditWork, HasAttachments, HasCases, HasContacts, Protocol):
    """The unit of work :class:`OpenAttachment` uses."""


class OpenAttachment:
    """The attachment and its blob as a stream. ``NotFound`` unless it is ``present`` and its
    blob exists. The database is not held while the blob streams."""

    def __init__(self, uow: OpenAttachmentWork, object_store: ObjectStore) -> None:
        self.uow = uow
        self.object_store = object_store

    async def __call__(
        self, principal: Principal, case_id: UUID, contact_id: UUID, attachment_id: UUID
    ) -> tuple[Attachment, Download]:
        download = AuditAction.DOWNLOAD
        attachment = await self._downloadable(principal, download, case_id, contact_id, attachment_id)
        # The blob is opened first, with no transaction held: a download the object store cannot
        # serve (down: 503; no blob: 404) is not recorded as served.
        blob = await self.object_store.open(attachment.object_key, ATTACHMENT_DOWNLOAD_CHUNK_BYTES)
        if blob is None:
            raise _no_blob(attachment)
        try:
            await self._record(principal, download, attachment, case_id)
        except BaseException:  # not recorded, not served
            await blob.aclose()
            raise
        return attachment, blob

    async def head(
        self, principal: Principal, case_id: UUID, contact_id: UUID, attachment_id: UUID
    ) -> tuple[Attachment, int]:
        """What a download would answer, without its content (an HTTP ``HEAD``): the attachment
        and its blob's size, the same refusals as a download (404 while pending or failed, or
        when the blob is missing; the store down raises), with the store asked for the blob's
        size only. Recorded as a ``read`` of the attachment: nothing was downloaded."""
        read = AuditAction.READ
        attachment = await self._downloadable(principal, read, case_id, contact_id, attachment_id)
        size = await self.object_store.head(attachment.object_key)
        if size is None:
            raise _no_blob(attachment)
        await self._record(principal, read, attachment, case_id)
        return attachment, size

    async def _downloadable(
        self, principal: Principal, action: AuditAction, case_id: UUID, contact_id: UUID, attachment_id: UUID
    ) -> Attachment:
        """The attachment, if the principal may see it and it is ``present``; a refusal is
        recorded as ``action`` denied."""
        async with refusals_recorded(self.uow, principal, action, ATTACHMENT, attachment_id, case_id=case_id):
            async with self.uow:
                attachment = await visible_attachment(self.uow, principal, case_id, contact_id, attachment_id)
                if not attachment.downloadable:
                    raise NotFound("attachment", attachment_id)
        return attachment

    async def _record(self, principal: Principal, action: AuditAction, attachment: Attachment, case_id: UUID) -> None:
        async with self.uow:
            await record(self.uow, principal, action, ATTACHMENT, attachment.id, case_id=case_id)
            await self.uow.commit()


def _no_blob(attachment: Attachment) -> NotFound:
    log.error("present attachment has no blob", attachment_id=str(attachment.id))
    return NotFound("attachment", attachment.id)
