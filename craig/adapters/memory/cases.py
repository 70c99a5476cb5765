"""Memory adapter of the case repository."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

import attrs

from craig.domain.access import Principal
from craig.domain.cases import Case, can_see
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import CaseRepository

if TYPE_CHECKING:
    from craig.adapters.memory.uow import MemoryUnitOfWork

CASES = "cases"


class MemoryCaseRepository(CaseRepository):
    def __init__(self, uow: MemoryUnitOfWork) -> None:
        self.uow = uow

    async def add(self, case: Case) -> None:
        self.uow.tx.put(CASES, case.id, case)

    async def get(self, case_id: UUID) -> Case | None:
        return self.uow.tx.get(CASES, case_id)  # type: ignore[no-any-return]

    async def list_visible(self, principal: Principal, page: PageRequest) -> Page[Case]:
        visible = sorted(
            self.uow.tx.select(CASES, lambda case: can_see(case, principal)),
            key=lambda case: (case.created_at, case.id),
            reverse=True,
        )
        items = visible[page.offset : page.offset + page.per_page]
        return Page(items=items, page=page.page, per_page=page.per_page, total=len(visible))

    async def assign(self, case_id: UUID, worker_sub: UUID, assigned_by: UUID) -> bool:
        case: Case | None = self.uow.tx.get(CASES, case_id)
        if case is None or worker_sub in case.assigned_workers:
            return False
        self.uow.tx.put(CASES, case_id, attrs.evolve(case, assigned_workers=case.assigned_workers | {worker_sub}))
        return True
