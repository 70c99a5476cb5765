"""Use case: read one attachment's metadata (any status).

The attachment's case and contact are checked first
(:func:`craig.usecases.cases.visibility.visible_contact`): whatever the principal may not see
answers 404, like an unknown attachment.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.attachments import Attachment
from craig.domain.errors import NotFound
from craig.ports.cases import HasAttachments, HasCases, HasContacts
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.cases.visibility import visible_contact


class GetAttachmentWork(UnitOfWork, HasAttachments, HasCases, HasContacts, Protocol):
    """The unit of work :class:`GetAttachment` uses."""


class GetAttachment:
    """One attachment of a contact of a case the principal may see, else :class:`NotFound`."""

    def __init__(self, uow: GetAttachmentWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, case_id: UUID, contact_id: UUID, attachment_id: UUID) -> Attachment:
        async with self.uow:
            await visible_contact(self.uow, principal, case_id, contact_id)
            attachment = await self.uow.attachments.get(contact_id, attachment_id)
        if attachment is None:
            raise NotFound("attachment", attachment_id)
        return attachment
