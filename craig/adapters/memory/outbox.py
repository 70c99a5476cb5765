"""Memory adapters of the outbox ports."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from uuid import UUID

import attrs

from craig.adapters.memory.database import MemoryDatabase
from craig.adapters.memory.session import MemorySession
from craig.adapters.telemetry import stamped
from craig.domain.events import EventEnvelope
from craig.domain.outbox import publishable_in_order
from craig.ports.outbox import (
    FailingCounts,
    FailingEvent,
    OutboxBatch,
    OutboxRecord,
    OutboxRelayStore,
    OutboxStats,
    OutboxWriter,
    PublishFailure,
    UnreadableEvent,
)

TABLE = "event_outbox"
CHANNEL = "craig_outbox"
#: The aggregates the relays' batches hold (:meth:`MemoryDatabase.held`).
HELD_AGGREGATES = "event_outbox aggregates"


@attrs.frozen(kw_only=True)
class OutboxRow:
    id: UUID
    seq: int
    envelope: EventEnvelope
    created_at: datetime
    next_attempt_at: datetime
    published_at: datetime | None = None
    attempts: int = 0
    last_error: str | None = None

    @property
    def aggregate(self) -> tuple[str, str]:
        return (self.envelope.aggregate_type, self.envelope.aggregate_id)


class MemoryOutboxWriter(OutboxWriter):
    def __init__(self, session: MemorySession) -> None:
        self.session = session

    async def stage(self, envelope: EventEnvelope) -> None:
        envelope = stamped(envelope)  # the request's id and trace context (craig.adapters.telemetry)
        tx = await self.session.tx()
        now = tx.db.now()
        row = OutboxRow(
            id=envelope.id, seq=tx.db.next_sequence(), envelope=envelope, created_at=now, next_attempt_at=now
        )
        tx.put(TABLE, envelope.id, row)
        tx.after_commit(lambda: tx.db.notifier.notify(CHANNEL))

    async def stage_many(self, envelopes: Sequence[EventEnvelope]) -> None:
        for envelope in envelopes:
            await self.stage(envelope)

    async def failing(self, limit: int) -> list[FailingEvent]:
        every = list((await self.session.tx()).rows(TABLE))
        return _failing_events(every, _failing_rows(every)[:limit])

    async def count_failing(self) -> FailingCounts:
        tx = await self.session.tx()
        rows, now = _failing_rows(tx.rows(TABLE)), tx.db.now()
        return FailingCounts(failing=len(rows), backing_off=sum(1 for r in rows if r.next_attempt_at > now))

    async def retry_failing(self, event_ids: Sequence[UUID] | None, limit: int) -> list[FailingEvent]:
        tx = await self.session.tx()
        wanted = None if event_ids is None else set(event_ids)
        held = tx.db.held(TABLE)  # in a relay's batch: being published right now, so skipped
        now = tx.db.now()
        chosen = [
            r
            for r in _failing_rows(tx.rows(TABLE))
            if (wanted is None or r.id in wanted) and r.id not in held and r.next_attempt_at > now
        ][:limit]
        for row in chosen:
            tx.put(TABLE, row.id, attrs.evolve(row, next_attempt_at=now))
        if chosen:  # wake the relays when this commits, as a staged event does
            tx.after_commit(lambda: tx.db.notifier.notify(CHANNEL))
        return _failing_events(tx.rows(TABLE), [tx.get(TABLE, row.id) for row in chosen])

    async def discard_failing(self, event_ids: Sequence[UUID]) -> list[FailingEvent]:
        tx = await self.session.tx()
        wanted, held = set(event_ids), tx.db.held(TABLE)
        chosen = [r for r in _failing_rows(tx.rows(TABLE)) if r.id in wanted and r.id not in held]
        discarded = _failing_events(tx.rows(TABLE), chosen)
        for row in chosen:
            tx.delete(TABLE, row.id)
        if chosen:  # the events behind them may go now
            tx.after_commit(lambda: tx.db.notifier.notify(CHANNEL))
        return discarded


def _failing_rows(rows: Iterable[OutboxRow]) -> list[OutboxRow]:
    return sorted((r for r in rows if r.published_at is None and r.attempts > 0), key=lambda r: r.seq)


def _failing_events(every: Iterable[OutboxRow], rows: Sequence[OutboxRow]) -> list[FailingEvent]:
    unpublished = [r for r in every if r.published_at is None]
    return [
        FailingEvent(
            id=row.id,
            event_type=row.envelope.type,
            aggregate_type=row.envelope.aggregate_type,
            aggregate_id=row.envelope.aggregate_id,
            created_at=row.created_at,
            attempts=row.attempts,
            last_error=row.last_error,
            next_attempt_at=row.next_attempt_at,
            waiting_behind=sum(1 for r in unpublished if r.aggregate == row.aggregate and r.seq > row.seq),
        )
        for row in rows
    ]


class _MemoryBatch(OutboxBatch):
    """Marks are buffered and applied in one transaction when the batch ends, like a COMMIT."""

    def __init__(self, rows: list[OutboxRow]) -> None:
        self._events = [OutboxRecord(r.id, r.seq, r.envelope, r.attempts) for r in rows]
        self.published: list[UUID] = []
        self.failed: list[PublishFailure] = []

    @property
    def events(self) -> Sequence[OutboxRecord]:
        return self._events

    @property
    def unreadable(self) -> Sequence[UnreadableEvent]:
        return ()  # the memory outbox keeps envelopes as objects: each one reads

    async def mark_published(self, ids: Sequence[UUID]) -> None:
        self.published.extend(ids)

    async def mark_failed(self, failures: Sequence[PublishFailure]) -> None:
        self.failed.extend(failures)


class MemoryOutboxRelayStore(OutboxRelayStore):
    """Claimed rows are "row-locked" in ``_locked`` and their aggregates held in ``_held`` for the
    life of the batch, so concurrent claimers skip them (``SKIP LOCKED``, and the relays' aggregate
    locks of PostgreSQL) without holding the database lock while publishing. Writers need no lock
    of their own: memory transactions run one at a time, so ``seq`` order is commit order."""

    def __init__(self, db: MemoryDatabase) -> None:
        self.db = db
        self._locked = db.held(TABLE)  # seen by the writer's retry_failing, as PostgreSQL's row locks are
        self._held = db.held(HELD_AGGREGATES)

    @asynccontextmanager
    async def claim_batch(self, limit: int) -> AsyncIterator[OutboxBatch]:
        async with self.db.transaction() as tx:
            now = self.db.now()
            pending: list[OutboxRow] = sorted(tx.select(TABLE, lambda r: r.published_at is None), key=lambda r: r.seq)
            backing_off: set[tuple[str, str]] = set()
            due: list[OutboxRow] = []
            for row in pending:
                if row.next_attempt_at > now:
                    backing_off.add(row.aggregate)
                elif not (row.aggregate in backing_off or row.aggregate in self._held or row.id in self._locked):
                    due.append(row)
            due = due[:limit]
            chosen = {r.id for r in due}
            aggregates = {r.aggregate for r in due}
            oldest_outside: dict[tuple[str, str], int] = {}
            for row in pending:
                if row.id not in chosen:
                    oldest_outside.setdefault(row.aggregate, row.seq)
            rows = publishable_in_order(due, oldest_outside)
            self._locked.update(chosen)
            self._held.update(aggregates)
        batch = _MemoryBatch(rows)
        try:
            yield batch
            async with self.db.transaction() as tx:
                now = self.db.now()
                for ident in batch.published:
                    published: OutboxRow = tx.get(TABLE, ident)
                    tx.put(TABLE, ident, attrs.evolve(published, published_at=now, last_error=None))
                for failure in batch.failed:
                    failed: OutboxRow = tx.get(TABLE, failure.id)
                    tx.put(
                        TABLE,
                        failure.id,
                        attrs.evolve(
                            failed,
                            attempts=failed.attempts + 1,
                            last_error=failure.error,
                            next_attempt_at=now + failure.retry_in,
                        ),
                    )
        finally:
            self._locked.difference_update(chosen)
            self._held.difference_update(aggregates)

    async def wait_for_events(self, timeout: timedelta) -> None:
        await self.db.notifier.wait(CHANNEL, "", timeout)

    async def purge_published(self, older_than: timedelta, batch_size: int) -> int:
        async with self.db.transaction() as tx:
            cutoff = self.db.now() - older_than
            doomed = [r.id for r in tx.select(TABLE, lambda r: r.published_at is not None and r.published_at < cutoff)][
                :batch_size
            ]
            for ident in doomed:
                tx.delete(TABLE, ident)
            return len(doomed)

    async def stats(self) -> OutboxStats:
        async with self.db.transaction() as tx:
            pending: list[OutboxRow] = tx.select(TABLE, lambda r: r.published_at is None)
        return OutboxStats(
            pending=len(pending),
            oldest_pending_created_at=min((r.created_at for r in pending), default=None),
            failing=sum(1 for r in pending if r.attempts > 0),
            now=self.db.now(),
        )
