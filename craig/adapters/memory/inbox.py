"""Memory adapters of the inbox ports."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import attrs

from craig.adapters.memory.database import MemoryDatabase, MemoryTransaction
from craig.adapters.memory.session import MemorySession
from craig.domain.events import EventEnvelope
from craig.ports.inbox import InboxRecord, InboxRepository, InboxStats, InboxStore
from craig.ports.messaging import UNROUTED

TABLE = "event_inbox"


@attrs.frozen(kw_only=True)
class InboxRow:
    consumer: str
    event_id: UUID
    envelope: EventEnvelope | None
    queue: str | None
    received_at: datetime
    next_attempt_at: datetime
    sequence: int
    processed_at: datetime | None = None
    failed_at: datetime | None = None
    error_count: int = 0
    last_error: str | None = None
    first_failed_at: datetime | None = None
    attempt_started_at: datetime | None = None

    def record(self) -> InboxRecord:
        return InboxRecord(
            consumer=self.consumer,
            event_id=self.event_id,
            envelope=self.envelope,
            queue=self.queue,
            received_at=self.received_at,
            processed_at=self.processed_at,
            failed_at=self.failed_at,
            error_count=self.error_count,
            last_error=self.last_error,
            first_failed_at=self.first_failed_at,
            next_attempt_at=self.next_attempt_at,
        )


def _insert(tx: MemoryTransaction, consumer: str, envelope: EventEnvelope, queue: str) -> InboxRow:
    key = (consumer, envelope.id)
    row: InboxRow | None = tx.get(TABLE, key)
    if row is None:
        now = tx.db.now()
        row = InboxRow(
            consumer=consumer,
            event_id=envelope.id,
            envelope=envelope,
            queue=queue,
            received_at=now,
            next_attempt_at=now,
            sequence=tx.db.next_sequence(),
        )
        tx.put(TABLE, key, row)
    return row


def _update(tx: MemoryTransaction, consumer: str, event_id: UUID, **changes: Any) -> InboxRow:
    row: InboxRow = tx.get(TABLE, (consumer, event_id))
    updated = attrs.evolve(row, **changes)
    tx.put(TABLE, (consumer, event_id), updated)
    return updated


class MemoryInboxRepository(InboxRepository):
    def __init__(self, session: MemorySession) -> None:
        self.session = session

    async def begin_attempt(self, consumer: str, envelope: EventEnvelope, queue: str) -> InboxRecord:
        tx = await self.session.tx()
        _insert(tx, consumer, envelope, queue)
        return _update(tx, consumer, envelope.id, attempt_started_at=tx.db.now()).record()

    async def mark_processed(self, consumer: str, event_id: UUID) -> None:
        _update((await self.session.tx()), consumer, event_id, processed_at=(await self.session.tx()).db.now())

    async def record_failure(
        self, consumer: str, event_id: UUID, error: str, *, retry_in: timedelta | None
    ) -> InboxRecord:
        tx = await self.session.tx()
        now = tx.db.now()
        row: InboxRow = tx.get(TABLE, (consumer, event_id))
        changes: dict[str, object] = {
            "error_count": row.error_count + 1,
            "last_error": error,
            "first_failed_at": row.first_failed_at or now,
        }
        if retry_in is None:
            changes["failed_at"] = now
        else:
            changes["next_attempt_at"] = now + retry_in
        return _update(tx, consumer, event_id, **changes).record()

    async def reset_for_replay(self, consumer: str, event_id: UUID) -> bool:
        tx = await self.session.tx()
        row: InboxRow | None = tx.get(TABLE, (consumer, event_id))
        if row is None or row.processed_at is not None:
            return False
        _update(tx, consumer, event_id, error_count=0, failed_at=None, next_attempt_at=tx.db.now())
        return True


class MemoryInboxStore(InboxStore):
    def __init__(self, db: MemoryDatabase) -> None:
        self.db = db

    async def enqueue(self, consumer: str, envelope: EventEnvelope, queue: str) -> bool:
        async with self.db.transaction() as tx:
            known = tx.get(TABLE, (consumer, envelope.id)) is not None
            _insert(tx, consumer, envelope, queue)
            return not known

    async def claim_due(self, consumers: Sequence[str], limit: int, lease: timedelta) -> list[InboxRecord]:
        wanted = set(consumers)
        async with self.db.transaction() as tx:
            now = self.db.now()
            due: list[InboxRow] = sorted(
                tx.select(
                    TABLE,
                    lambda r: (
                        r.consumer in wanted
                        and r.processed_at is None
                        and r.failed_at is None
                        and r.next_attempt_at <= now
                    ),
                ),
                key=lambda r: r.sequence,
            )[:limit]
            return [_update(tx, r.consumer, r.event_id, next_attempt_at=now + lease).record() for r in due]

    async def dead_letters(self, limit: int) -> list[InboxRecord]:
        async with self.db.transaction() as tx:
            dead: list[InboxRow] = sorted(tx.select(TABLE, lambda r: r.failed_at is not None), key=lambda r: r.sequence)
            return [r.record() for r in dead[:limit]]

    async def dead_letter(self, consumer: str, event_id: UUID, error: str) -> bool:
        async with self.db.transaction() as tx:
            row: InboxRow | None = tx.get(TABLE, (consumer, event_id))
            if row is None or row.processed_at is not None or row.failed_at is not None:
                return False
            now = tx.db.now()
            _update(
                tx,
                consumer,
                event_id,
                failed_at=now,
                last_error=error,
                error_count=row.error_count + 1,
                first_failed_at=row.first_failed_at or now,
            )
            return True

    async def discard_dead(self, consumer: str, event_id: UUID) -> bool:
        async with self.db.transaction() as tx:
            row: InboxRow | None = tx.get(TABLE, (consumer, event_id))
            if row is None or row.failed_at is None:
                return False
            tx.delete(TABLE, (consumer, event_id))
            return True

    async def waiting_rows(
        self, consumer: str, limit: int, *, after: tuple[datetime, UUID] | None = None
    ) -> list[InboxRecord]:
        async with self.db.transaction() as tx:
            rows: list[InboxRow] = tx.select(
                TABLE,
                lambda r: (
                    r.consumer == consumer
                    and r.processed_at is None
                    and r.failed_at is None
                    and (after is None or (r.next_attempt_at, r.event_id) > after)
                ),
            )
        rows.sort(key=lambda r: (r.next_attempt_at, r.event_id))
        return [r.record() for r in rows[:limit]]

    async def delete_waiting(self, consumer: str, event_id: UUID) -> bool:
        async with self.db.transaction() as tx:
            row: InboxRow | None = tx.get(TABLE, (consumer, event_id))
            if row is None or row.processed_at is not None or row.failed_at is not None:
                return False
            tx.delete(TABLE, (consumer, event_id))
            return True

    async def waiting(self, consumer: str) -> int:
        async with self.db.transaction() as tx:
            rows = tx.select(TABLE, lambda r: r.consumer == consumer and r.processed_at is None and r.failed_at is None)
            return len(rows)

    async def stats(self) -> InboxStats:
        async with self.db.transaction() as tx:
            rows: list[InboxRow] = list(tx.rows(TABLE))
        return InboxStats(
            retrying=sum(1 for r in rows if r.processed_at is None and r.failed_at is None and r.error_count > 0),
            dead=sum(1 for r in rows if r.failed_at is not None),
            processed=sum(1 for r in rows if r.processed_at is not None),
        )

    async def purge_processed(self, older_than: timedelta, batch_size: int) -> int:
        async with self.db.transaction() as tx:
            cutoff = self.db.now() - older_than

            def expired(r: InboxRow) -> bool:
                if r.processed_at is not None:
                    return r.processed_at < cutoff
                return r.consumer == UNROUTED and r.failed_at is None and r.next_attempt_at < cutoff

            doomed = [(r.consumer, r.event_id) for r in tx.select(TABLE, expired)][:batch_size]
            for key in doomed:
                tx.delete(TABLE, key)
            return len(doomed)

    async def purge_broadcast(self, consumers: Sequence[str], older_than: timedelta, batch_size: int) -> int:
        prefixes = tuple(f"{name}@" for name in consumers)
        async with self.db.transaction() as tx:
            cutoff = self.db.now() - older_than
            rows: list[InboxRow] = sorted(
                tx.select(TABLE, lambda r: bool(prefixes) and r.consumer.startswith(prefixes)), key=lambda r: r.sequence
            )
            unprocessed = [r for r in rows if r.processed_at is None and r.failed_at is None and r.received_at < cutoff]
            dead = [r for r in rows if r.failed_at is not None and r.failed_at < cutoff]
            doomed = unprocessed[:batch_size] + dead[:batch_size]
            for row in doomed:
                tx.delete(TABLE, (row.consumer, row.event_id))
            return len(doomed)
