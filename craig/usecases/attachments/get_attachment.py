"""Use case: read one attachment's metadata (any status).

The attachment's case and contact are checked first
(:func:`craig.usecases.cases.visibility.visible_contact`): whatever the principal may not see
answers 404, like an unknown attachment. The read is recorded in the audit trail in the same
transaction (a refused one as ``denied``).
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.attachments import Attachment
from craig.domain.audit import AuditAction
from craig.domain.errors import NotFound
from craig.ports.cases import HasAttachments, HasCases, HasContacts
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import ATTACHMENT
from craig.usecases.cases.visibility import visible_contact


class GetAttachmentWork(AuditWork, HasAttachments, HasCases, HasContacts, Protocol):
    """The unit of work :class:`GetAttachment` uses."""


class VisibleAttachmentWork(HasAttachments, HasCases, HasContacts, Protocol):
    """What :func:`visible_attachment` uses."""


async def visible_attachment(
    uow: VisibleAttachmentWork, principal: Principal, case_id: UUID, contact_id: UUID, attachment_id: UUID
) -> Attachment:
    """The attachment of a contact of a case the principal may see, inside the caller's block,
    or :class:`NotFound`."""
    await visible_contact(uow, principal, case_id, contact_id)
    attachment = await uow.attachments.get(contact_id, attachment_id)
    if attachment is None:
        raise NotFound("attachment", attachment_id)
    return attachment


class GetAttachment:
    """One attachment of a contact of a case the principal may see, else :class:`NotFound`."""

    def __init__(self, uow: GetAttachmentWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, case_id: UUID, contact_id: UUID, attachment_id: UUID) -> Attachment:
        read = AuditAction.READ
        async with refusals_recorded(self.uow, principal, read, ATTACHMENT, attachment_id, case_id=case_id), self.uow:
            attachment = await visible_attachment(self.uow, principal, case_id, contact_id, attachment_id)
            await record(self.uow, principal, read, ATTACHMENT, attachment_id, case_id=case_id)
            await self.uow.commit()
        return attachment
