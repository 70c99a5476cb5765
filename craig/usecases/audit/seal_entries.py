"""Seal committed audit entries into the hash chain (the sealer worker's pass)."""

from __future__ import annotations

from craig.domain.constants import AUDIT_SEAL_BATCH_SIZE
from craig.ports.audit import AuditChainStore, SealedBatch


class SealAuditEntries:
    """One batch per call; the worker calls again at once while batches come back full."""

    def __init__(self, store: AuditChainStore, batch_size: int = AUDIT_SEAL_BATCH_SIZE) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self.store = store
        self.batch_size = batch_size
        self.last: SealedBatch | None = None

    async def __call__(self) -> SealedBatch:
        self.last = await self.store.seal_pending(self.batch_size)
        return self.last

    async def run_once(self) -> bool:
        """A worker pass: True when the batch was full (more may be waiting)."""
        return (await self()).sealed >= self.batch_size
