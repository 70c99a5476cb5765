"""Memory adapter of ``uow.audit``: entries as rows of the memory database.

Like the PostgreSQL triggers, it stamps ``at`` with the database clock (once per transaction,
as ``now()`` is) and the writing transaction's number, which orders sealing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

import attrs

from craig.adapters.memory.database import MemoryTransaction
from craig.adapters.memory.session import MemorySession
from craig.domain.audit import AuditEntry
from craig.domain.audit_query import AuditCursor, AuditFilter, AuditPage
from craig.ports.audit import AuditRepository
from craig.ports.errors import ConstraintViolation

ENTRIES = "audit_entries"
CHAIN = "audit_chain"
PURGES = "audit_purges"
RETENTION = "audit_retention"


@attrs.frozen
class EntryRow:
    entry: AuditEntry
    #: The writing transaction's number (PostgreSQL: its xid).
    xid: int


class MemoryAuditRepository(AuditRepository):
    def __init__(self, session: MemorySession) -> None:
        self.session = session
        self._stamp: tuple[MemoryTransaction, int, datetime] | None = None

    async def append(self, entries: Sequence[AuditEntry]) -> list[AuditEntry]:
        tx = await self.session.tx()
        if self._stamp is None or self._stamp[0] is not tx:
            self._stamp = (tx, self.session.db.next_sequence(), self.session.db.now())
        _, xid, at = self._stamp
        stored = []
        for entry in entries:
            row = EntryRow(entry.written_at(at), xid)
            if not tx.insert(ENTRIES, entry.id, row):
                raise ConstraintViolation("audit_entries_pkey", f"audit entry {entry.id} exists")
            stored.append(row.entry)
        return stored

    async def list(self, where: AuditFilter, limit: int, cursor: AuditCursor | None = None) -> AuditPage:
        tx = await self.session.tx()
        found = [
            row.entry
            for row in tx.select(ENTRIES, lambda row: where.matches(row.entry))
            if cursor is None or _key(row.entry) < (cursor.at, cursor.id)
        ]
        found.sort(key=_key, reverse=True)
        sealed = {link.entry_id: link.seq for link in tx.rows(CHAIN)}
        rows = [attrs.evolve(entry, seq=sealed.get(entry.id)) for entry in found[: limit + 1]]
        return AuditPage.of(rows, limit)

    async def case_history(self, case_id: UUID, limit: int, cursor: AuditCursor | None = None) -> AuditPage:
        return await self.list(AuditFilter(case_id=case_id, changes_only=True), limit, cursor)


def _key(entry: AuditEntry) -> tuple[object, UUID]:
    return (entry.at, entry.id)
