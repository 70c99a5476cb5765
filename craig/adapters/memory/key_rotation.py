"""Memory adapter of the encrypted-column store: memory rows carry the PostgreSQL column names."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs

from craig.adapters.memory.database import MemoryDatabase
from craig.ports.key_rotation import EncryptedColumn, EncryptedColumnStore, Rekey, RekeyedBatch


def _stale(row: Any, column: EncryptedColumn, prefix: str) -> bool:
    value = getattr(row, column.column, None)
    if column.binary:
        return isinstance(value, bytes) and not value.startswith(prefix.encode("ascii"))
    return isinstance(value, str) and not value.startswith(prefix)


class MemoryEncryptedColumnStore(EncryptedColumnStore):
    def __init__(self, db: MemoryDatabase) -> None:
        self.db = db

    async def count_stale(self, column: EncryptedColumn, current_prefix: str) -> int:
        async with self.db.transaction() as tx:
            return len(tx.select(column.table, lambda row: _stale(row, column, current_prefix)))

    async def rekey_batch(
        self, column: EncryptedColumn, current_prefix: str, after: Any, limit: int, rekey: Rekey
    ) -> RekeyedBatch:
        async with self.db.transaction() as tx:
            candidates = [
                (table_key, row)
                for table_key, row in self.db.raw(column.table).items()
                if _stale(row, column, current_prefix) and (after is None or getattr(row, column.key) > after)
            ]
            candidates.sort(key=lambda pair: getattr(pair[1], column.key))
            chosen = candidates[:limit]
            rewritten = 0
            for table_key, row in chosen:
                replacement = rekey(getattr(row, column.key), getattr(row, column.column))
                if replacement is not None:
                    value = replacement.encode("ascii") if column.binary else replacement
                    tx.put(column.table, table_key, attrs.evolve(row, **{column.column: value}))
                    rewritten += 1
            last = getattr(chosen[-1][1], column.key) if chosen else None
        await asyncio.sleep(0)  # like a database round trip, let other tasks in between batches
        return RekeyedBatch(scanned=len(chosen), rewritten=rewritten, last_key=last)
