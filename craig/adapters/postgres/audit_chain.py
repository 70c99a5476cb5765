"""PostgreSQL adapter of the audit chain: sealing, reading links, the floor and purging.

**Sealing without a hot row and without skipping late entries.** Requests only INSERT entries;
each entry carries the id of the transaction that wrote it (``xid``, stamped by a trigger). A
sealer takes a transaction-level advisory lock (so sealers, and the purge, take turns; the
primary key on ``seq`` and the insert trigger would refuse a fork anyway), reads the head, and
in ONE statement (one snapshot) selects the entries not in the chain whose ``xid`` is at least
the head's *watermark*, together with the snapshot's ``xmin``: every transaction older than
``xmin`` has ended, so its entries, if it committed, are visible now. Entries are sealed in
``(xid, at, id)`` order, and the new links carry the watermark ``min(xmin, xid of the first
entry left for the next batch)``. An entry whose transaction is still open has an ``xid`` at or
above the snapshot's ``xmin``, so it stays above every later watermark: whenever it commits, a
later pass finds it and appends it to the chain (after entries that committed before it).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from sqlalchemy import text

from craig.adapters.postgres.audit import ENTRY_COLUMNS, entry_from_row
from craig.adapters.postgres.database import DriverConnection, PostgresDatabase
from craig.domain.audit_chain import ChainHead, ChainLink, ChainStart, seal
from craig.ports.audit import AuditChainStore, PendingEntries, RetentionFloor, SealedBatch

#: pg_advisory_xact_lock key of the chain's writers (the sealer, the purge): "craigAUD".
CHAIN_LOCK_KEY = 0x637261696741554
_LOCK = text("SELECT pg_advisory_xact_lock(:key)").bindparams(key=CHAIN_LOCK_KEY)
_HEAD = text("SELECT seq, hash, watermark FROM audit_chain ORDER BY seq DESC LIMIT 1")
_CANDIDATES = text(
    f"""
    SELECT {ENTRY_COLUMNS}, e.xid, pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xmin
      FROM audit_entries e
     WHERE e.xid >= :watermark AND NOT EXISTS (SELECT 1 FROM audit_chain c WHERE c.entry_id = e.id)
     ORDER BY e.xid, e.at, e.id
     LIMIT :limit
    """
)
_APPEND = text(
    "INSERT INTO audit_chain (seq, entry_id, prev_hash, hash, watermark) "
    "VALUES (:seq, :entry_id, :prev_hash, :hash, :watermark)"
)
_LINKS = f"""
    SELECT c.seq, c.entry_id, c.prev_hash, c.hash, c.sealed_at, {ENTRY_COLUMNS}
      FROM audit_chain c LEFT JOIN audit_entries e ON e.id = c.entry_id
"""
_START = text("SELECT through_seq, anchor_hash FROM audit_purges ORDER BY through_seq DESC LIMIT 1")
_FLOOR = text(
    """
    SELECT retention, set_at,
           EXISTS (SELECT 1 FROM audit_retention a JOIN audit_retention b ON b.id > a.id
                    WHERE b.retention < a.retention) AS ever_lowered
      FROM audit_retention ORDER BY id DESC LIMIT 1
    """
)
_RAISE_FLOOR = text(
    "INSERT INTO audit_retention (retention) SELECT CAST(:retention AS interval) "
    "WHERE CAST(:retention AS interval) > audit_retention_floor()"
)
_PURGEABLE = text(
    """
    SELECT c.seq, c.hash, c.entry_id, e.id IS NOT NULL AS has_entry,
           greatest(c.sealed_at, e.at) < now() - greatest(CAST(:older_than AS interval), audit_retention_floor())
               AS expired
      FROM audit_chain c LEFT JOIN audit_entries e ON e.id = c.entry_id
     WHERE c.seq < (SELECT max(seq) FROM audit_chain)
     ORDER BY c.seq LIMIT :limit
    """
)


def _link(row: Mapping[Any, Any]) -> ChainLink:
    entry = entry_from_row(row, row["seq"]) if row["id"] is not None else None
    return ChainLink(row["seq"], row["entry_id"], bytes(row["prev_hash"]), bytes(row["hash"]), entry, row["sealed_at"])


class PostgresAuditChainStore(AuditChainStore):
    def __init__(self, database: PostgresDatabase) -> None:
        self.database = database

    async def seal_pending(self, batch_size: int) -> SealedBatch:
        async with self.database.transaction() as conn:
            await conn.execute(_LOCK)
            top = (await conn.execute(_HEAD)).first()
            head = ChainHead(top.seq, bytes(top.hash)) if top else await self._purged_head(conn)
            watermark = top.watermark if top else 0
            rows = (await conn.execute(_CANDIDATES, {"watermark": watermark, "limit": batch_size + 1})).mappings().all()
            if not rows:
                return SealedBatch(0, head if top else None)
            chosen, rest = rows[:batch_size], rows[batch_size:]
            xmin = rows[0]["xmin"]
            watermark = max(watermark, min(xmin, rest[0]["xid"]) if rest else xmin)
            links = seal(head, [entry_from_row(row, None) for row in chosen])
            rows_out = [
                {"seq": k.seq, "entry_id": k.entry_id, "prev_hash": k.prev_hash, "hash": k.hash, "watermark": watermark}
                for k in links
            ]
            await conn.execute(_APPEND, rows_out)
        return SealedBatch(len(links), ChainHead(links[-1].seq, links[-1].hash))

    async def _purged_head(self, conn: DriverConnection) -> ChainHead:
        start = await self._start(conn)
        return ChainHead(start.first_seq - 1, start.anchor)

    async def _start(self, conn: DriverConnection) -> ChainStart:
        row = (await conn.execute(_START)).first()
        return ChainStart(row.through_seq + 1, bytes(row.anchor_hash)) if row else ChainStart()

    async def head(self) -> ChainHead | None:
        async with self.database.transaction() as conn:
            row = (await conn.execute(_HEAD)).first()
        return ChainHead(row.seq, bytes(row.hash)) if row else None

    async def start(self) -> ChainStart:
        async with self.database.transaction() as conn:
            return await self._start(conn)

    async def count_links(self) -> int:
        async with self.database.transaction() as conn:
            return int((await conn.execute(text("SELECT count(*) FROM audit_chain"))).scalar_one())

    async def links(self, after_seq: int, limit: int) -> list[ChainLink]:
        query = text(f"{_LINKS} WHERE c.seq > :after ORDER BY c.seq LIMIT :limit")
        async with self.database.transaction() as conn:
            rows = (await conn.execute(query, {"after": after_seq, "limit": limit})).mappings().all()
        return [_link(row) for row in rows]

    async def link_at(self, seq: int) -> ChainLink | None:
        async with self.database.transaction() as conn:
            row = (await conn.execute(text(f"{_LINKS} WHERE c.seq = :seq"), {"seq": seq})).mappings().first()
        return _link(row) if row else None

    async def seq_of_hash(self, digest: bytes) -> int | None:
        async with self.database.transaction() as conn:
            seq = (await conn.execute(text("SELECT seq FROM audit_chain WHERE hash = :h"), {"h": digest})).scalar()
        return None if seq is None else int(seq)

    async def pending(self) -> PendingEntries:
        query = text(
            "SELECT count(*), min(e.at) FROM audit_entries e "
            "WHERE NOT EXISTS (SELECT 1 FROM audit_chain c WHERE c.entry_id = e.id)"
        )
        async with self.database.transaction() as conn:
            count, oldest = (await conn.execute(query)).one()
        return PendingEntries(int(count), oldest)

    async def retention_floor(self) -> RetentionFloor:
        async with self.database.transaction() as conn:
            row = (await conn.execute(_FLOOR)).one()
        return RetentionFloor(row.retention, row.set_at, row.ever_lowered)

    async def raise_retention_floor(self, retention: timedelta) -> RetentionFloor:
        async with self.database.transaction() as conn:
            await conn.execute(_RAISE_FLOOR, {"retention": retention})
        return await self.retention_floor()

    async def purge(self, older_than: timedelta, batch_size: int) -> int:
        async with self.database.transaction() as conn:
            await conn.execute(_LOCK)
            rows = (await conn.execute(_PURGEABLE, {"older_than": older_than, "limit": batch_size})).all()
            doomed = []
            for row in rows:
                if not (row.expired and row.has_entry):
                    break  # a young link (or one whose entry is missing: verify reports it) ends the purge
                doomed.append(row)
            if not doomed:
                return 0
            ids = [row.entry_id for row in doomed]
            last = doomed[-1]
            await conn.execute(text("DELETE FROM audit_chain WHERE seq <= :seq"), {"seq": last.seq})
            await conn.execute(text("DELETE FROM audit_entries WHERE id = ANY(:ids)"), {"ids": ids})
            await conn.execute(
                text("INSERT INTO audit_purges (through_seq, anchor_hash, entries) VALUES (:seq, :hash, :n)"),
                {"seq": last.seq, "hash": last.hash, "n": len(doomed)},
            )
        return len(doomed)
