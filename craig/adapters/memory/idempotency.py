"""Memory adapters of the idempotency ports: the domain state machine over the memory database.

Stored response bodies are ciphertext (``RESPONSE_BODY``), as in PostgreSQL."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

import attrs

from craig.adapters.memory.database import MemoryDatabase
from craig.adapters.memory.session import MemorySession
from craig.adapters.sealed_fields import RESPONSE_BODY
from craig.domain import idempotency as model
from craig.domain.idempotency import ClaimRequest, Slot, SlotStatus, StoredResponse
from craig.ports.cipher import FieldCipher
from craig.ports.idempotency import (
    Claimed,
    ClaimOutcome,
    Existing,
    IdempotencySlots,
    IdempotencyStats,
    IdempotencyStore,
)

TABLE = "idempotency_responses"
CHANNEL = "craig_idempotency"


@attrs.frozen
class SlotRow:
    """A stored slot: ``body`` is the response body's ciphertext (None when there is none);
    ``slot`` is the rest, its response (if any) without a body."""

    slot: Slot
    body: bytes | None = None

    @property
    def cache_key(self) -> str:
        return self.slot.cache_key


def _row(slot: Slot, cipher: FieldCipher | None = None) -> SlotRow:
    response = slot.response
    if response is None or not response.body:
        return SlotRow(slot)
    assert cipher is not None, "a slot with a response body is stored through the cipher"
    body = cipher.encrypt_bytes(response.body, RESPONSE_BODY.context(slot.cache_key))
    return SlotRow(attrs.evolve(slot, response=attrs.evolve(response, body=b"")), body)


def _slot(row: SlotRow, cipher: FieldCipher) -> Slot:
    response = row.slot.response
    if response is None or row.body is None:
        return row.slot
    body = cipher.decrypt_bytes(row.body, RESPONSE_BODY.context(row.cache_key))
    return attrs.evolve(row.slot, response=attrs.evolve(response, body=body))


class MemoryIdempotencyStore(IdempotencyStore):
    def __init__(self, db: MemoryDatabase, cipher: FieldCipher) -> None:
        self.db = db
        self.cipher = cipher

    async def try_claim(self, request: ClaimRequest, ttl: timedelta) -> ClaimOutcome:
        async with self.db.transaction() as tx:
            now = self.db.now()
            row: SlotRow | None = tx.get(TABLE, request.cache_key)
            existing = _slot(row, self.cipher) if row is not None else None
            decision = model.decide_claim(existing, request, now, ttl)
            if isinstance(decision, model.Claim):
                tx.put(TABLE, request.cache_key, _row(decision.slot))
                return Claimed(decision.slot)
            assert existing is not None
            return Existing(existing, now)

    async def extend_claim(self, cache_key: str, token: int, ttl: timedelta) -> bool:
        async with self.db.transaction() as tx:
            row: SlotRow | None = tx.get(TABLE, cache_key)
            if row is None:
                return False
            try:
                extended = model.extend_claim(row.slot, token, self.db.now(), ttl)
                tx.put(TABLE, cache_key, attrs.evolve(row, slot=extended))
            except model.ClaimLost:
                return False
            return True

    async def get(self, cache_key: str) -> tuple[Slot | None, datetime]:
        async with self.db.transaction() as tx:
            row: SlotRow | None = tx.get(TABLE, cache_key)
            return (_slot(row, self.cipher) if row is not None else None), self.db.now()

    async def finalize_failed(self, cache_key: str, token: int, detail: str) -> bool:
        async with self.db.transaction() as tx:
            row: SlotRow | None = tx.get(TABLE, cache_key)
            if row is None:
                return False
            try:
                tx.put(TABLE, cache_key, _row(model.finalize_failed(row.slot, token, detail, self.db.now())))
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
                row.cache_key
                for row in tx.rows(TABLE)
                if row.slot.started_at < now - older_than and not row.slot.is_live_claim(now)
            ][:batch_size]
            for key in doomed:
                tx.delete(TABLE, key)
            return len(doomed)

    async def stats(self) -> IdempotencyStats:
        async with self.db.transaction() as tx:
            slots: list[Slot] = [row.slot for row in tx.rows(TABLE)]
        processing = [s.started_at for s in slots if s.status is SlotStatus.PROCESSING]
        return IdempotencyStats(
            by_status=dict(Counter(str(s.status) for s in slots)),
            oldest_processing_started_at=min(processing, default=None),
            now=self.db.now(),
        )


class MemoryIdempotencySlots(IdempotencySlots):
    def __init__(self, session: MemorySession) -> None:
        self.session = session

    async def finalize_succeeded(self, cache_key: str, token: int, response: StoredResponse) -> None:
        tx = await self.session.tx()
        row: SlotRow | None = tx.get(TABLE, cache_key)
        if row is None:
            raise model.ClaimLost("idempotency slot vanished (purged) before finalize")
        slot = model.finalize_succeeded(row.slot, token, response, tx.db.now())
        tx.put(TABLE, cache_key, _row(slot, self.session.cipher))
        tx.after_commit(lambda: tx.db.notifier.notify(CHANNEL, cache_key))
