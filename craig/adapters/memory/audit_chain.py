"""Memory adapter of the audit chain. The memory database runs one transaction at a time, so
every committed entry is visible to a sealing pass; it seals in the same order as PostgreSQL
(writing transaction, ``at``, ``id``) and keeps the same purge records and retention floor."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta

import attrs

from craig.adapters.memory.audit import CHAIN, ENTRIES, PURGES, RETENTION, EntryRow
from craig.adapters.memory.database import MemoryDatabase, MemoryTransaction
from craig.domain.audit_chain import ChainHead, ChainLink, ChainStart, seal
from craig.domain.constants import AUDIT_RETENTION
from craig.ports.audit import AuditChainStore, PendingEntries, RetentionFloor, SealedBatch


@attrs.frozen
class PurgeRow:
    through_seq: int
    anchor_hash: bytes
    entries: int
    purged_at: datetime


@attrs.frozen
class FloorRow:
    id: int
    retention: timedelta
    set_at: datetime


class MemoryAuditChainStore(AuditChainStore):
    def __init__(self, db: MemoryDatabase) -> None:
        self.db = db
        self._installed_at = db.now()

    def _chain(self, tx: MemoryTransaction) -> list[ChainLink]:
        return sorted(tx.rows(CHAIN), key=lambda link: link.seq)

    def _start(self, tx: MemoryTransaction) -> ChainStart:
        purges = sorted(tx.rows(PURGES), key=lambda row: row.through_seq)
        return ChainStart(purges[-1].through_seq + 1, purges[-1].anchor_hash) if purges else ChainStart()

    def _with_entry(self, tx: MemoryTransaction, link: ChainLink) -> ChainLink:
        row = tx.get(ENTRIES, link.entry_id)
        return attrs.evolve(link, entry=None if row is None else attrs.evolve(row.entry, seq=link.seq))

    def _floors(self, tx: MemoryTransaction) -> list[FloorRow]:
        installed = FloorRow(0, AUDIT_RETENTION, self._installed_at)  # as the migration's row
        return [installed, *sorted(tx.rows(RETENTION), key=lambda row: row.id)]

    async def seal_pending(self, batch_size: int) -> SealedBatch:
        async with self.db.transaction() as tx:
            chain = self._chain(tx)
            start = self._start(tx)
            head = ChainHead(chain[-1].seq, chain[-1].hash) if chain else ChainHead(start.first_seq - 1, start.anchor)
            sealed = {link.entry_id for link in chain}
            pending: list[EntryRow] = tx.select(ENTRIES, lambda row: row.entry.id not in sealed)
            pending.sort(key=lambda row: (row.xid, row.entry.at, row.entry.id))
            links = seal(head, [row.entry for row in pending[:batch_size]])
            for link in links:
                tx.put(CHAIN, link.seq, attrs.evolve(link, entry=None, sealed_at=self.db.now()))
        if not links:
            return SealedBatch(0, head if chain else None)
        return SealedBatch(len(links), ChainHead(links[-1].seq, links[-1].hash))

    async def head(self) -> ChainHead | None:
        async with self.db.transaction() as tx:
            chain = self._chain(tx)
        return ChainHead(chain[-1].seq, chain[-1].hash) if chain else None

    async def start(self) -> ChainStart:
        async with self.db.transaction() as tx:
            return self._start(tx)

    async def count_links(self) -> int:
        async with self.db.transaction() as tx:
            return len(list(tx.rows(CHAIN)))

    async def links(self, after_seq: int, limit: int) -> list[ChainLink]:
        async with self.db.transaction() as tx:
            chosen = [link for link in self._chain(tx) if link.seq > after_seq][:limit]
            return [self._with_entry(tx, link) for link in chosen]

    async def link_at(self, seq: int) -> ChainLink | None:
        async with self.db.transaction() as tx:
            link = tx.get(CHAIN, seq)
            return None if link is None else self._with_entry(tx, link)

    async def seq_of_hash(self, digest: bytes) -> int | None:
        async with self.db.transaction() as tx:
            return next((link.seq for link in tx.rows(CHAIN) if link.hash == digest), None)

    async def pending(self) -> PendingEntries:
        async with self.db.transaction() as tx:
            sealed = {link.entry_id for link in tx.rows(CHAIN)}
            times = [row.entry.at for row in tx.rows(ENTRIES) if row.entry.id not in sealed]
        return PendingEntries(len(times), min(times) if times else None)

    async def retention_floor(self) -> RetentionFloor:
        async with self.db.transaction() as tx:
            rows = self._floors(tx)
        lowered = any(later.retention < earlier.retention for earlier, later in itertools.pairwise(rows))
        return RetentionFloor(rows[-1].retention, rows[-1].set_at, lowered)

    async def raise_retention_floor(self, retention: timedelta) -> RetentionFloor:
        async with self.db.transaction() as tx:
            current = self._floors(tx)[-1]
            if retention > current.retention:
                tx.put(RETENTION, current.id + 1, FloorRow(current.id + 1, retention, self.db.now()))
        return await self.retention_floor()

    async def purge(self, older_than: timedelta, batch_size: int) -> int:
        async with self.db.transaction() as tx:
            cutoff = self.db.now() - max(older_than, self._floors(tx)[-1].retention)
            doomed = []
            for link in self._chain(tx)[:-1][:batch_size]:
                row = tx.get(ENTRIES, link.entry_id)
                if row is None or max(link.sealed_at, row.entry.at) >= cutoff:
                    break
                doomed.append(link)
            for link in doomed:
                tx.delete(CHAIN, link.seq)
                tx.delete(ENTRIES, link.entry_id)
            if doomed:
                last = doomed[-1]
                tx.put(PURGES, last.seq, PurgeRow(last.seq, last.hash, len(doomed), self.db.now()))
        return len(doomed)
