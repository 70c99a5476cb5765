"""Memory adapter of the case repository: ``title`` and ``family_name`` are stored as ciphertext."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

from craig.adapters.memory.session import MemorySession
from craig.adapters.sealed_fields import CASE_FAMILY_NAME, CASE_TITLE, seal, seal_optional, unseal, unseal_optional
from craig.domain.access import Principal
from craig.domain.cases import Case, can_see
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import CaseRepository

CASES = "cases"


@attrs.frozen(kw_only=True)
class CaseRow:
    """The stored row: ``title`` and ``family_name`` are ciphertext."""

    id: UUID
    title: str
    family_name: str | None
    opened_at: datetime
    created_by: UUID
    created_at: datetime
    assigned_workers: frozenset[UUID] = frozenset()


class MemoryCaseRepository(CaseRepository):
    def __init__(self, session: MemorySession) -> None:
        self.session = session

    def _case(self, row: CaseRow) -> Case:
        return Case(
            id=row.id,
            title=unseal(self.session.cipher, CASE_TITLE, row.id, row.title),
            family_name=unseal_optional(self.session.cipher, CASE_FAMILY_NAME, row.id, row.family_name),
            opened_at=row.opened_at,
            created_by=row.created_by,
            created_at=row.created_at,
            assigned_workers=row.assigned_workers,
        )

    async def add(self, case: Case) -> None:
        row = CaseRow(
            id=case.id,
            title=seal(self.session.cipher, CASE_TITLE, case.id, case.title),
            family_name=seal_optional(self.session.cipher, CASE_FAMILY_NAME, case.id, case.family_name),
            opened_at=case.opened_at,
            created_by=case.created_by,
            created_at=case.created_at,
            assigned_workers=case.assigned_workers,
        )
        (await self.session.tx()).put(CASES, case.id, row)

    async def get(self, case_id: UUID) -> Case | None:
        row: CaseRow | None = (await self.session.tx()).get(CASES, case_id)
        return self._case(row) if row is not None else None

    async def list_visible(self, principal: Principal, page: PageRequest) -> Page[Case]:
        # Visibility needs no decryption: it is who created the case and who is assigned to it.
        visible: list[CaseRow] = sorted(
            (await self.session.tx()).select(CASES, lambda row: can_see(row, principal)),
            key=lambda row: (row.created_at, row.id),
            reverse=True,
        )
        items = [self._case(row) for row in visible[page.offset : page.offset + page.per_page]]
        return Page(items=items, page=page.page, per_page=page.per_page, total=len(visible))

    async def assign(self, case_id: UUID, worker_sub: UUID, assigned_by: UUID) -> bool:
        row: CaseRow | None = (await self.session.tx()).get(CASES, case_id)
        if row is None or worker_sub in row.assigned_workers:
            return False
        (await self.session.tx()).put(
            CASES, case_id, attrs.evolve(row, assigned_workers=row.assigned_workers | {worker_sub})
        )
        return True
