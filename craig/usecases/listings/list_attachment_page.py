"""A contact's attachments, oldest first, one keyset page at a time."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.attachments import Attachment
from craig.domain.audit import AuditAction
from craig.domain.keyset import Keyset, KeysetPage
from craig.ports.cases import HasAttachments, HasCases, HasContacts
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import ATTACHMENT
from craig.usecases.cases import visible_contact


class ListAttachmentPageWork(AuditWork, HasAttachments, HasCases, HasContacts, Protocol):
    """The unit of work :class:`ListAttachmentPage` uses."""


class ListAttachmentPage:
    """404 when the case or contact is unknown or not visible to the principal (recorded as
    ``denied``). The page is recorded with the ids it returned."""

    def __init__(self, uow: ListAttachmentPageWork) -> None:
        self.uow = uow

    async def __call__(
        self, principal: Principal, case_id: UUID, contact_id: UUID, keyset: Keyset
    ) -> KeysetPage[Attachment]:
        async with refusals_recorded(self.uow, principal, AuditAction.LIST, ATTACHMENT, case_id=case_id), self.uow:
            await visible_contact(self.uow, principal, case_id, contact_id)
            found = await self.uow.attachments.page_for_contact(contact_id, keyset)
            ids = [attachment.id for attachment in found.items]
            await record(self.uow, principal, AuditAction.LIST, ATTACHMENT, case_id=case_id, resource_ids=ids)
            await self.uow.commit()
        return found
