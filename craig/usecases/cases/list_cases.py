"""Use case: list the cases a principal may see.

A case worker sees the cases they created or are assigned to; supervisors and admins see every
case. The repository filters (``list_visible``), so a page holds only cases the principal may
see.
"""

from __future__ import annotations

from typing import Protocol

from craig.domain.access import Principal
from craig.domain.cases import Case
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import HasCases
from craig.ports.unit_of_work import UnitOfWork


class ListCasesWork(UnitOfWork, HasCases, Protocol):
    """The unit of work :class:`ListCases` uses."""


class ListCases:
    """The cases the principal may see, newest first, one page."""

    def __init__(self, uow: ListCasesWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, page: PageRequest) -> Page[Case]:
        async with self.uow:
            return await self.uow.cases.list_visible(principal, page)
