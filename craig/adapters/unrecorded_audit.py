"""``uow.audit`` that records nothing: for benchmarks and tests only.

With ``CRAIG_AUDIT__ENABLED=false`` the unit of work's audit repository is this wrapper: an
append is accepted and dropped (nothing is written, the entries are returned as given), and the
reads go to the real repository, so entries written before, or by another process, are still
listed. The production profile refuses to start with the setting off (see the settings rules):
it exists to measure what recording costs, side by side with it on.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from craig.domain.audit import AuditEntry
from craig.domain.audit_query import AuditCursor, AuditFilter, AuditPage
from craig.ports.audit import AuditRepository


class UnrecordedAuditRepository(AuditRepository):
    """Appends are dropped; reads are those of ``stored`` (the unit of work's real repository)."""

    def __init__(self, stored: AuditRepository) -> None:
        self.stored = stored

    async def append(self, entries: Sequence[AuditEntry]) -> list[AuditEntry]:
        return list(entries)

    async def list(self, where: AuditFilter, limit: int, cursor: AuditCursor | None = None) -> AuditPage:
        return await self.stored.list(where, limit, cursor)

    async def case_history(self, case_id: UUID, limit: int, cursor: AuditCursor | None = None) -> AuditPage:
        return await self.stored.case_history(case_id, limit, cursor)
