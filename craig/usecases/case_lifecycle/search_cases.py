"""Find the cases the principal may see, filtered and sorted, one keyset page at a time."""

from __future__ import annotations

from typing import Protocol

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.case_search import CaseQuery
from craig.domain.cases import Case
from craig.domain.keyset import Keyset, KeysetPage
from craig.ports.cases import HasCases
from craig.usecases.audit.record import AuditWork, record
from craig.usecases.audit.resource_types import CASE


class SearchCasesWork(AuditWork, HasCases, Protocol):
    """The unit of work :class:`SearchCases` uses."""


class SearchCases:
    """Visibility first (a case worker's own and assigned cases, a screener's assigned ones,
    every case for supervisors and admins), then every filter of ``query`` (AND). The search is
    recorded (``search``) with the ids it returned, never the values it was filtered by."""

    def __init__(self, uow: SearchCasesWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, query: CaseQuery, keyset: Keyset) -> KeysetPage[Case]:
        async with self.uow:
            found = await self.uow.cases.search(principal, query, keyset)
            ids = [case.id for case in found.items]
            await record(self.uow, principal, AuditAction.SEARCH, CASE, resource_ids=ids)
            await self.uow.commit()
        return found
