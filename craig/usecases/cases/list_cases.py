"""Use case: list the cases a principal may see.

A case worker sees the cases they created or are assigned to; supervisors and admins see every
case. The repository filters (``list_visible``), so a page holds only cases the principal may
see. The list is recorded in the audit trail with the ids it returned.
"""

from __future__ import annotations

from typing import Protocol

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.cases import Case
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import HasCases
from craig.usecases.audit.record import AuditWork, record
from craig.usecases.audit.resource_types import CASE


class ListCasesWork(AuditWork, HasCases, Protocol):
    """The unit of work :class:`ListCases` uses."""


class ListCases:
    """The cases the principal may see, newest first, one page."""

    def __init__(self, uow: ListCasesWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, page: PageRequest) -> Page[Case]:
        async with self.uow:
            found = await self.uow.cases.list_visible(principal, page)
            await record(self.uow, principal, AuditAction.LIST, CASE, resource_ids=[c.id for c in found.items])
            await self.uow.commit()
        return found
