"""Use case: list the contacts of a case.

The case is checked first: a case the principal may not see answers 404, never an empty page,
so its existence does not leak.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.contacts import Contact
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import HasCases, HasContacts
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.cases.visibility import visible_case


class ListContactsWork(UnitOfWork, HasCases, HasContacts, Protocol):
    """The unit of work :class:`ListContacts` uses."""


class ListContacts:
    """A visible case's contacts, most recent first."""

    def __init__(self, uow: ListContactsWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, case_id: UUID, page: PageRequest) -> Page[Contact]:
        async with self.uow:
            await visible_case(self.uow, principal, case_id)
            return await self.uow.contacts.list_for_case(case_id, page)
