"""Memory adapters of the idempotency ports: the domain state machine over the memory database."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from craig.domain import idempotency as model
from craig.domain.idempotency import ClaimRequest, Slot, SlotStatus, StoredResponse
from craig.ports.idempotency import (
    Claimed,
    ClaimOutcome,
    Existing,
    IdempotencySlots,
    IdempotencyStats,
    IdempotencyStore,
)

if TYPE_CHECKING:
    from craig.adapters.memory.database import MemoryDatabase
    from craig.adapters.memory.uow import MemoryUnitOfWork

TABLE = "idempotency_responses"
CHANNEL = "craig_idempotency"


class MemoryIdempotencyStore(IdempotencyStore):
    def __init__(self, db: MemoryDatabase) -> None:
        self.db = db

    async def try_claim(self, request: ClaimRequest, ttl: timedelta) -> ClaimOutcome:
        async with self.db.transaction() as tx:
            now = self.db.now()
            existing: Slot | None = tx.get(TABLE, request.cache_key)
            decision = model.decide_claim(existing, request, now, ttl)
            if isinstance(decision, model.Claim):
                tx.put(TABLE, request.cache_key, decision.slot)
                return Claimed(decision.slot)
            assert existing is not None
            return Existing(existing, now)

    async def extend_claim(self, cache_key: str, token: int, ttl: timedelta) -> bool:
        async with self.db.transaction() as tx:
            slot: Slot | None = tx.get(TABLE, cache_key)
            if slot is None:
                return False
            try:
                tx.put(TABLE, cache_key, model.extend_claim(slot, token, self.db.now(), ttl))
            except model.ClaimLost:
                return False
            return True

    async def get(self, cache_key: str) -> tuple[Slot | None, datetime]:
        async with self.db.transaction() as tx:
            return tx.get(TABLE, cache_key), self.db.now()

    async def finalize_failed(self, cache_key: str, token: int, detail: str) -> bool:
        async with self.db.transaction() as tx:
            slot: Slot | None = tx.get(TABLE, cache_key)
            if slot is None:
                return False
            try:
                tx.put(TABLE, cache_key, model.finalize_failed(slot, token, detail, self.db.now()))
            except model.ClaimLost:
                return False
            tx.after_commit(lambda: self.db.notifier.notify(CHANNEL, cache_key))
            return True

    async def wait_for_change(self, cache_key: str, timeout: timedelta) -> None:
        await self.db.notifier.wait(CHANNEL, cache_key, timeout)

    async def purge(self, older_than: timedelta, batch_size: int) -> int:
        async with self.db.transaction() as tx:
            now = self.db.now()
            doomed = [
                slot.cache_key
                for slot in tx.rows(TABLE)
                if slot.started_at < now - older_than and not slot.is_live_claim(now)
            ][:batch_size]
            for key in doomed:
                tx.delete(TABLE, key)
            return len(doomed)

    async def stats(self) -> IdempotencyStats:
        async with self.db.transaction() as tx:
            slots: list[Slot] = list(tx.rows(TABLE))
        processing = [s.started_at for s in slots if s.status is SlotStatus.PROCESSING]
        return IdempotencyStats(
            by_status=dict(Counter(str(s.status) for s in slots)),
            oldest_processing_started_at=min(processing, default=None),
            now=self.db.now(),
        )


class MemoryIdempotencySlots(IdempotencySlots):
    def __init__(self, uow: MemoryUnitOfWork) -> None:
        self.uow = uow

    async def finalize_succeeded(self, cache_key: str, token: int, response: StoredResponse) -> None:
        tx = self.uow.tx
        slot: Slot | None = tx.get(TABLE, cache_key)
        if slot is None:
            raise model.ClaimLost("idempotency slot vanished (purged) before finalize")
        tx.put(TABLE, cache_key, model.finalize_succeeded(slot, token, response, tx.db.now()))
        tx.after_commit(lambda: tx.db.notifier.notify(CHANNEL, cache_key))
