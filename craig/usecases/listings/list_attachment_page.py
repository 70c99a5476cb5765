"""A contact's attachments, oldest first, one keyset page at a time."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.attachments import Attachment
from craig.domain.keyset import Keyset, KeysetPage
from craig.ports.cases import HasAttachments, HasCases, HasContacts
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.cases import visible_contact


class ListAttachmentPageWork(UnitOfWork, HasAttachments, HasCases, HasContacts, Protocol):
    """The unit of work :class:`ListAttachmentPage` uses."""


class ListAttachmentPage:
    """404 when the case or contact is unknown or not visible to the principal."""

    def __init__(self, uow: ListAttachmentPageWork) -> None:
        self.uow = uow

    async def __call__(
        self, principal: Principal, case_id: UUID, contact_id: UUID, keyset: Keyset
    ) -> KeysetPage[Attachment]:
        async with self.uow:
            await visible_contact(self.uow, principal, case_id, contact_id)
            return await self.uow.attachments.page_for_contact(contact_id, keyset)
