"""Find the cases the principal may see, filtered and sorted, one keyset page at a time."""

from __future__ import annotations

from typing import Protocol

from craig.domain.access import Principal
from craig.domain.case_search import CaseQuery
from craig.domain.cases import Case
from craig.domain.keyset import Keyset, KeysetPage
from craig.ports.cases import HasCases
from craig.ports.unit_of_work import UnitOfWork


class SearchCasesWork(UnitOfWork, HasCases, Protocol):
    """The unit of work :class:`SearchCases` uses."""


class SearchCases:
    """Visibility first (a case worker's own and assigned cases, a screener's assigned ones,
    every case for supervisors and admins), then every filter of ``query`` (AND)."""

    def __init__(self, uow: SearchCasesWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, query: CaseQuery, keyset: Keyset) -> KeysetPage[Case]:
        async with self.uow:
            return await self.uow.cases.search(principal, query, keyset)
