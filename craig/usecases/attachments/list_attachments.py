"""Use case: list a contact's attachments.

Every status is listed (``pending``, ``present``, ``failed``), so a client sees an upload the
scanner has not settled yet. The case and contact are checked first: what the principal may
not see answers 404, never an empty page.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.attachments import Attachment
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import HasAttachments, HasCases, HasContacts
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.cases.visibility import visible_contact


class ListAttachmentsWork(UnitOfWork, HasAttachments, HasCases, HasContacts, Protocol):
    """The unit of work :class:`ListAttachments` uses."""


class ListAttachments:
    """A contact's attachments, every status, oldest first."""

    def __init__(self, uow: ListAttachmentsWork) -> None:
        self.uow = uow

    async def __call__(
        self, principal: Principal, case_id: UUID, contact_id: UUID, page: PageRequest
    ) -> Page[Attachment]:
        async with self.uow:
            await visible_contact(self.uow, principal, case_id, contact_id)
            return await self.uow.attachments.list_for_contact(contact_id, page)
