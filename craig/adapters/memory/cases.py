"""Memory adapter of the case repository: the rows hold the PostgreSQL table's columns, title,
family name and closure reason as ciphertext (:mod:`craig.adapters.case_codec`)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

from craig.adapters.case_codec import case_columns, case_from_columns, family_name_candidates, family_name_index
from craig.adapters.memory.session import MemorySession
from craig.adapters.sealed_fields import CASE_FAMILY_NAME, unseal_optional
from craig.domain.access import Principal
from craig.domain.case_search import CaseQuery
from craig.domain.cases import Case, can_see
from craig.domain.keyset import Keyset, KeysetPage, after, keyset_page
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import ONE_CASE_PER_REFERRAL, CaseRepository
from craig.ports.errors import ConstraintViolation

CASES = "cases"


@attrs.frozen(kw_only=True)
class CaseRow:
    """The stored row: ``title``, ``family_name`` and ``close_reason`` are ciphertext."""

    id: UUID
    title: str
    family_name: str | None
    family_name_index: str | None = None
    opened_at: datetime
    created_by: UUID
    created_at: datetime
    status: str = "open"
    closed_at: datetime | None = None
    close_reason: str | None = None
    referral_id: UUID | None = None
    updated_at: datetime
    version: int = 1
    assigned_workers: frozenset[UUID] = frozenset()


class MemoryCaseRepository(CaseRepository):
    def __init__(self, session: MemorySession) -> None:
        self.session = session

    def _case(self, row: CaseRow) -> Case:
        return case_from_columns(self.session.cipher, attrs.asdict(row, recurse=False), row.assigned_workers)

    async def _row(self, case_id: UUID) -> CaseRow | None:
        row: CaseRow | None = (await self.session.tx()).get(CASES, case_id)
        return row

    async def add(self, case: Case) -> None:
        tx = await self.session.tx()
        if tx.get(CASES, case.id) is not None:
            raise ConstraintViolation("cases_pkey", f"case {case.id} exists")
        if case.referral_id is not None and tx.select(CASES, lambda row: row.referral_id == case.referral_id):
            raise ConstraintViolation(ONE_CASE_PER_REFERRAL, f"referral {case.referral_id} has a case")
        row = CaseRow(**case_columns(self.session.cipher, case), assigned_workers=case.assigned_workers)
        tx.put(CASES, case.id, row)

    async def get(self, case_id: UUID) -> Case | None:
        row = await self._row(case_id)
        return self._case(row) if row is not None else None

    async def get_for_update(self, case_id: UUID) -> Case | None:
        return await self.get(case_id)  # one transaction at a time: every read is locked

    async def get_for_share(self, case_id: UUID) -> Case | None:
        return await self.get(case_id)

    async def save(self, case: Case) -> None:
        row = await self._row(case.id)
        if row is None:
            return
        columns = case_columns(self.session.cipher, case)
        kept = ("id", "opened_at", "created_by", "created_at", "referral_id")
        changed = {name: value for name, value in columns.items() if name not in kept}
        (await self.session.tx()).put(CASES, case.id, attrs.evolve(row, **changed))

    async def list_visible(self, principal: Principal, page: PageRequest) -> Page[Case]:
        # Visibility needs no decryption: it is who created the case and who is assigned to it.
        visible: list[CaseRow] = sorted(
            (await self.session.tx()).select(CASES, lambda row: can_see(row, principal)),
            key=lambda row: (row.created_at, row.id),
            reverse=True,
        )
        items = [self._case(row) for row in visible[page.offset : page.offset + page.per_page]]
        return Page(items=items, page=page.page, per_page=page.per_page, total=len(visible))

    async def search(self, principal: Principal, query: CaseQuery, keyset: Keyset) -> KeysetPage[Case]:
        indexes = (
            set(family_name_candidates(self.session.cipher, query.family_name))
            if query.family_name is not None
            else None
        )
        descending = (query.sort.descending, query.sort.descending)

        def wanted(row: CaseRow) -> bool:
            if not can_see(row, principal) or (indexes is not None and row.family_name_index not in indexes):
                return False
            return after((getattr(row, query.sort.column), row.id), keyset, descending)

        rows: list[CaseRow] = sorted(
            (await self.session.tx()).select(CASES, wanted),
            key=lambda row: (getattr(row, query.sort.column), row.id),
            reverse=query.sort.descending,
        )
        found: list[Case] = []
        for row in rows:
            case = self._case(row)
            if query.matches(case):
                found.append(case)
                if len(found) > keyset.limit:
                    break
        return keyset_page(found, keyset, query.sort_key)

    async def _set_workers(self, case_id: UUID, workers: frozenset[UUID], now: datetime) -> None:
        row = await self._row(case_id)
        assert row is not None
        touched = attrs.evolve(row, assigned_workers=workers, version=row.version + 1, updated_at=now)
        (await self.session.tx()).put(CASES, case_id, touched)

    async def assign(self, case_id: UUID, worker_sub: UUID, assigned_by: UUID, now: datetime) -> bool:
        row = await self._row(case_id)
        if row is None or worker_sub in row.assigned_workers:
            return False
        await self._set_workers(case_id, row.assigned_workers | {worker_sub}, now)
        return True

    async def unassign(self, case_id: UUID, worker_sub: UUID, now: datetime) -> bool:
        row = await self._row(case_id)
        if row is None or worker_sub not in row.assigned_workers:
            return False
        await self._set_workers(case_id, row.assigned_workers - {worker_sub}, now)
        return True

    def _stale(self, row: CaseRow) -> bool:
        prefix = self.session.cipher.blind_index_prefix
        return row.family_name is not None and not (row.family_name_index or "").startswith(prefix)

    async def reindex_family_names(self, after: UUID | None, limit: int) -> tuple[int, UUID | None]:
        tx = await self.session.tx()
        rows: list[CaseRow] = sorted(
            tx.select(CASES, lambda row: self._stale(row) and (after is None or row.id > after)), key=lambda r: r.id
        )[:limit]
        cipher = self.session.cipher
        for row in rows:
            try:
                name = unseal_optional(cipher, CASE_FAMILY_NAME, row.id, row.family_name)
            except ValueError:
                continue
            tx.put(CASES, row.id, attrs.evolve(row, family_name_index=family_name_index(cipher, name)))
        return len(rows), (rows[-1].id if rows else None)

    async def count_stale_family_name_indexes(self) -> int:
        return len((await self.session.tx()).select(CASES, self._stale))
