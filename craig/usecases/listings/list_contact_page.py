"""A case's contacts, most recent first, one keyset page at a time."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.contacts import Contact
from craig.domain.keyset import Keyset, KeysetPage
from craig.ports.cases import HasCases, HasContacts
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import CONTACT
from craig.usecases.cases import visible_case


class ListContactPageWork(AuditWork, HasCases, HasContacts, Protocol):
    """The unit of work :class:`ListContactPage` uses."""


class ListContactPage:
    """404 when the case is unknown or not visible to the principal (recorded as ``denied``).
    The page is recorded with the ids it returned."""

    def __init__(self, uow: ListContactPageWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, case_id: UUID, keyset: Keyset) -> KeysetPage[Contact]:
        async with refusals_recorded(self.uow, principal, AuditAction.LIST, CONTACT, case_id=case_id), self.uow:
            await visible_case(self.uow, principal, case_id)
            found = await self.uow.contacts.page_for_case(case_id, keyset)
            ids = [contact.id for contact in found.items]
            await record(self.uow, principal, AuditAction.LIST, CONTACT, case_id=case_id, resource_ids=ids)
            await self.uow.commit()
        return found
