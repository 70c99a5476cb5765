"""Use case: the two-phase attachment upload.

Phase 1 commits the ``pending`` row and ``cases.contact_attachment_uploaded`` in a unit of work
of its own, taken from a factory: the row must be durable before the blob exists, whatever
transaction the request itself runs in (the idempotency layer holds the request's transaction
open until the response is stored), so a blob never exists without a row that the scanner can
reconcile. Phase 2 puts the blob, then marks the row ``present`` in the request's unit of work.
When the put fails, however it fails (a port error, any other exception, even a cancellation),
ONE compensating transaction (again a unit of work of its own) deletes the pending row and
stages ``cases.contact_attachment_upload_failed``; it runs to its end even if the request is
cancelled meanwhile. The error then propagates: ``ObjectStoreUnavailable`` answers 503 and the
client retries with the same Idempotency-Key; anything else answers a 500 problem. Only a crash
between the phases (or a failed compensation) leaves a ``pending`` row; the attachment scanner
settles it.

The audit entry (``upload``) commits in phase 1, with the row it records: from then on the
attachment is listed, and no attachment exists without its entry. A compensated upload keeps
its entry (the attempt was made; ``cases.contact_attachment_upload_failed`` says it was undone).
A refusal (an invisible case or unknown contact) is recorded as ``denied`` on the request's
unit of work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol
from uuid import UUID

import attrs
import structlog

from craig.domain.access import Principal
from craig.domain.attachments import (
    Attachment,
    ObjectStatus,
    UploadValidation,
    new_attachment,
    validate_upload,
)
from craig.domain.audit import AuditAction
from craig.domain.errors import Conflict
from craig.ports.cases import HasAttachments, HasCases, HasContacts
from craig.ports.clock import Clock
from craig.ports.errors import ObjectStoreUnavailable, PortError
from craig.ports.object_store import ObjectStore
from craig.ports.outbox import HasOutbox
from craig.usecases.attachments.events import upload_failed_event, uploaded_event
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import ATTACHMENT
from craig.usecases.case_lifecycle.guards import visible_open_case
from craig.usecases.cases.visibility import visible_contact
from craig.usecases.events.staging import stage_event
from craig.usecases.ids import new_id

log = structlog.get_logger(__name__)


class UploadAttachmentWork(AuditWork, HasAttachments, HasCases, HasContacts, HasOutbox, Protocol):
    """The unit of work :class:`UploadAttachment` uses."""


class UploadAttachment:
    """Validate, then run the two phases. Raises the validation errors of
    :func:`craig.domain.attachments.validate_upload` before anything is written, ``NotFound``
    for an invisible case or unknown contact, and, after compensating, whatever the put raised
    (``ObjectStoreUnavailable``; a ``CancelledError`` that is not this task's own cancellation
    is reported as ``ObjectStoreUnavailable`` too, since the put did not complete).

    A caller that may repeat the request (an idempotent retry) passes the same ``attachment_id``
    each time: a repeat then resumes the earlier attempt instead of creating a second attachment
    (its ``pending`` row, left by a crash or a lost response, is completed; a ``present`` one is
    returned as it is).
    """

    def __init__(
        self,
        uow: UploadAttachmentWork,
        uow_factory: Callable[[], UploadAttachmentWork],
        object_store: ObjectStore,
        clock: Clock,
        validation: UploadValidation,
    ) -> None:
        #: The request's unit of work (phase 2), and where phase 1 and the compensation get
        #: units of work of their own.
        self.uow = uow
        self.uow_factory = uow_factory
        self.object_store = object_store
        self.clock = clock
        self.validation = validation

    async def __call__(
        self,
        principal: Principal,
        case_id: UUID,
        contact_id: UUID,
        *,
        file_name: str,
        content_type: str,
        body: bytes,
        attachment_type: str | None,
        attachment_id: UUID | None = None,
    ) -> Attachment:
        # In a thread: a body is checked whole (a 25 MB text, an archive's directory), which
        # must not hold up every other request of this process meanwhile.
        media_type = await asyncio.to_thread(validate_upload, content_type, body, self.validation)
        now = self.clock.now()
        draft = new_attachment(
            id=attachment_id or new_id(),
            case_id=case_id,
            contact_id=contact_id,
            attachment_type=attachment_type,
            file_name=file_name,
            content_type=media_type,
            file_size=len(body),
            uploaded_by=principal.sub,
            worker_name=principal.name,
            now=now,
            object_id=new_id(),  # never the key of an earlier attempt's orphan (see new_attachment)
        )
        async with (
            refusals_recorded(self.uow, principal, AuditAction.UPLOAD, ATTACHMENT, case_id=case_id),
            self.uow_factory() as phase1,
        ):
            await visible_contact(phase1, principal, case_id, contact_id)
            await visible_open_case(phase1, principal, case_id)  # 409 case-closed
            # Only a retry (an id derived from the Idempotency-Key) can find an earlier attempt.
            earlier = await phase1.attachments.get(contact_id, draft.id) if attachment_id is not None else None
            if earlier is None:
                attachment = await phase1.attachments.add(draft)
                await stage_event(phase1, uploaded_event(attachment, case_id, now))
            # A retry is another request, recorded again.
            await record(phase1, principal, AuditAction.UPLOAD, ATTACHMENT, draft.id, case_id=case_id)
            await phase1.commit()
        if earlier is not None:
            if earlier.object_status is not ObjectStatus.PENDING:
                return _settled(earlier)
            attachment = earlier
        try:  # Phase 2
            await self.object_store.put(attachment.object_key, body, media_type)
        except BaseException as error:
            if await self._compensate_to_the_end(attachment, error):
                raise asyncio.CancelledError from error  # cancelled while compensating
            if isinstance(error, asyncio.CancelledError) and not _being_cancelled():
                raise ObjectStoreUnavailable("the object store's put was cancelled") from error
            raise
        async with self.uow:
            promoted = await self.uow.attachments.mark_present(attachment.id)
            if promoted:
                await self.uow.commit()
                return attrs.evolve(attachment, object_status=ObjectStatus.PRESENT)
            # A concurrent attempt settled it, or the scanner removed it (a put outlived grace).
            current = await self.uow.attachments.get(contact_id, attachment.id)
        if current is None:
            raise await self._reconciled_away(attachment)
        return _settled(current)

    async def _compensate_to_the_end(self, attachment: Attachment, error: BaseException) -> bool:
        """Run the compensation to its end even if this task is cancelled meanwhile (it shares
        another unit of work than the request's). True if cancelled."""
        compensation = asyncio.ensure_future(self._compensate(attachment, error))
        cancelled = False
        while True:
            try:
                await asyncio.shield(compensation)
                return cancelled
            except asyncio.CancelledError:
                if compensation.cancelled():
                    return True
                cancelled = True

    async def _compensate(self, attachment: Attachment, error: BaseException) -> None:
        log.warning(
            "blob write failed after phase 1; compensating",
            attachment_id=str(attachment.id),
            error=f"{type(error).__name__}: {error}",
        )
        try:
            async with self.uow_factory() as uow:
                if await uow.attachments.delete_pending(attachment.id):
                    # Events are not encrypted: only Craig's own wording of a port failure, or
                    # the exception's type, never the text of an arbitrary exception.
                    reason = (str(error) if isinstance(error, PortError) else "") or type(error).__name__
                    event = upload_failed_event(attachment.id, attachment.contact_id, reason, self.clock.now())
                    await stage_event(uow, event)
                await uow.commit()
        except Exception as compensation_error:
            # The row stays pending; the scanner deletes it (HEAD 404) after the grace period.
            log.error(
                "compensation failed; the scanner will settle the row",
                attachment_id=str(attachment.id),
                error=str(compensation_error),
            )

    async def _reconciled_away(self, attachment: Attachment) -> ObjectStoreUnavailable:
        """The put outlived the scanner's grace and the scanner removed the row: drop the blob
        (best effort; else it is an orphan the scanner removes) and let the client retry."""
        try:
            await self.object_store.delete(attachment.object_key)
        except PortError:  # best effort: else it is an orphan the scanner removes
            pass
        return ObjectStoreUnavailable("the upload took longer than the reconciliation grace period; retry it")


def _being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _settled(attachment: Attachment) -> Attachment:
    if attachment.object_status is ObjectStatus.FAILED:
        raise Conflict(
            f"attachment {attachment.id} failed verification and is kept for an operator; "
            "upload the file again with a new Idempotency-Key"
        )
    return attachment
