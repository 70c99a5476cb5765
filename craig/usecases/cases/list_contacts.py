"""Use case: list the contacts of a case.

The case is checked first: a case the principal may not see answers 404, never an empty page,
so its existence does not leak. The list is recorded in the audit trail with the ids it
returned (a refused one as ``denied``).
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.contacts import Contact
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import HasCases, HasContacts
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import CONTACT
from craig.usecases.cases.visibility import visible_case


class ListContactsWork(AuditWork, HasCases, HasContacts, Protocol):
    """The unit of work :class:`ListContacts` uses."""


class ListContacts:
    """A visible case's contacts, most recent first."""

    def __init__(self, uow: ListContactsWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, case_id: UUID, page: PageRequest) -> Page[Contact]:
        async with refusals_recorded(self.uow, principal, AuditAction.LIST, CONTACT, case_id=case_id), self.uow:
            await visible_case(self.uow, principal, case_id)
            found = await self.uow.contacts.list_for_case(case_id, page)
            ids = [contact.id for contact in found.items]
            await record(self.uow, principal, AuditAction.LIST, CONTACT, case_id=case_id, resource_ids=ids)
            await self.uow.commit()
        return found
