"""Use case: list a contact's attachments.

Every status is listed (``pending``, ``present``, ``failed``), so a client sees an upload the
scanner has not settled yet. The case and contact are checked first: what the principal may
not see answers 404, never an empty page. The list is recorded in the audit trail with the
ids it returned (a refused one as ``denied``).
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.attachments import Attachment
from craig.domain.audit import AuditAction
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import HasAttachments, HasCases, HasContacts
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import ATTACHMENT
from craig.usecases.cases.visibility import visible_contact


class ListAttachmentsWork(AuditWork, HasAttachments, HasCases, HasContacts, Protocol):
    """The unit of work :class:`ListAttachments` uses."""


class ListAttachments:
    """A contact's attachments, every status, oldest first."""

    def __init__(self, uow: ListAttachmentsWork) -> None:
        self.uow = uow

    async def __call__(
        self, principal: Principal, case_id: UUID, contact_id: UUID, page: PageRequest
    ) -> Page[Attachment]:
        async with refusals_recorded(self.uow, principal, AuditAction.LIST, ATTACHMENT, case_id=case_id), self.uow:
            await visible_contact(self.uow, principal, case_id, contact_id)
            found = await self.uow.attachments.list_for_contact(contact_id, page)
            ids = [attachment.id for attachment in found.items]
            await record(self.uow, principal, AuditAction.LIST, ATTACHMENT, case_id=case_id, resource_ids=ids)
            await self.uow.commit()
        return found
