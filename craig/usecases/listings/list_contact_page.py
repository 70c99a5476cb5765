"""A case's contacts, most recent first, one keyset page at a time."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.contacts import Contact
from craig.domain.keyset import Keyset, KeysetPage
from craig.ports.cases import HasCases, HasContacts
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.cases import visible_case


class ListContactPageWork(UnitOfWork, HasCases, HasContacts, Protocol):
    """The unit of work :class:`ListContactPage` uses."""


class ListContactPage:
    """404 when the case is unknown or not visible to the principal."""

    def __init__(self, uow: ListContactPageWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, case_id: UUID, keyset: Keyset) -> KeysetPage[Contact]:
        async with self.uow:
            await visible_case(self.uow, principal, case_id)
            return await self.uow.contacts.page_for_case(case_id, keyset)
