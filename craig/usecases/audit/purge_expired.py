"""Purge audit entries past their retention (the cleanup worker's audit step).

The configured retention first raises the store's floor (the store never lowers it), then
entries and links older than the longer of the two go, oldest first, in batches; the chain stays
verifiable from the first kept link. A configured retention shorter than the floor purges at
the floor: only the database owner can lower it.
"""

from __future__ import annotations

from datetime import timedelta

from craig.ports.audit import AuditChainStore, RetentionFloor


class PurgeExpiredAuditEntries:
    def __init__(self, store: AuditChainStore) -> None:
        self.store = store
        self.floor: RetentionFloor | None = None

    async def __call__(self, older_than: timedelta, batch_size: int) -> int:
        """``purge(older_than, batch_size) -> entries deleted``, as the cleanup worker calls it."""
        if older_than <= timedelta(0):
            raise ValueError("an audit retention must be positive")
        self.floor = await self.store.raise_retention_floor(older_than)
        return await self.store.purge(max(older_than, self.floor.retention), batch_size)
