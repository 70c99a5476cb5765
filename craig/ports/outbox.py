"""Ports of the transactional outbox."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from typing import Protocol
from uuid import UUID

import attrs

from craig.domain.events import EventEnvelope


class OutboxWriter(Protocol):
    """``uow.outbox``: stage events inside the caller's transaction.

    Staging serialises the writers of an aggregate: it takes a lock on (aggregate_type,
    aggregate_id) that is held until the transaction ends, before the event gets its place in
    the outbox. So the events of one aggregate are numbered in the order their transactions
    commit, whatever else the use case locks or forgets to lock; the relay publishes them in that
    order. (PostgreSQL: a transaction-level advisory lock; memory: transactions run one at a time,
    which serialises every writer already.)

    A transaction that stages events of several aggregates should stage them in ONE
    :meth:`stage_many` call, which locks them in a fixed order. Two transactions that stage
    aggregates A then B and B then A in separate calls can deadlock; the database then aborts
    one of them (``TransientConflict``). Anything that inserts outbox rows without this writer
    must hold a lock serialising the aggregate's writers, taken before the insert.
    """

    async def stage(self, envelope: EventEnvelope) -> None:
        """Lock the event's aggregate, then insert the event. Nothing is published unless the
        transaction commits."""
        ...

    async def stage_many(self, envelopes: Sequence[EventEnvelope]) -> None:
        """Lock every aggregate of ``envelopes`` (in a fixed order), then insert the events with
        one statement, in the given order."""
        ...

    # --- for operators (``craig outbox``) ------------------------------------------------------
    async def failing(self, limit: int) -> list[FailingEvent]:
        """Up to ``limit`` unpublished events whose publish failed at least once (backing off, or
        due again), oldest staged first."""
        ...

    async def count_failing(self) -> FailingCounts:
        """How many unpublished events have failed at least once, and how many of those are
        backing off (not due yet)."""
        ...

    async def retry_failing(self, event_ids: Sequence[UUID] | None, limit: int) -> list[FailingEvent]:
        """Make those of ``event_ids`` (or, without ids, up to ``limit`` of them, oldest first)
        that are failing and backing off due now, ending their backoff; ``attempts`` and
        ``last_error`` stay. An event held right now (a relay publishing it, another retry) is
        skipped, not waited for; so is one that is not backing off (due already, published,
        unknown). Returns the events made due, as they are now."""
        ...

    async def discard_failing(self, event_ids: Sequence[UUID]) -> list[FailingEvent]:
        """Delete those of ``event_ids`` that are failing (unpublished, failed at least once),
        so that the events of their aggregate waiting behind them go on; returns them as they
        were. One held right now (a relay publishing it, a retry) is skipped, not waited for; so
        is one that is not failing (published, never failed, unknown)."""
        ...


@attrs.frozen
class FailingCounts:
    failing: int
    backing_off: int


@attrs.frozen(kw_only=True)
class FailingEvent:
    """An unpublished event whose publish failed at least once, as an operator sees it."""

    id: UUID
    event_type: str
    aggregate_type: str
    aggregate_id: str
    created_at: datetime
    attempts: int
    last_error: str | None
    next_attempt_at: datetime
    #: Unpublished events of its aggregate staged after it: each waits until it is published.
    waiting_behind: int


@attrs.frozen
class OutboxRecord:
    id: UUID
    seq: int
    envelope: EventEnvelope
    attempts: int

    @property
    def aggregate(self) -> tuple[str, str]:
        return (self.envelope.aggregate_type, self.envelope.aggregate_id)


@attrs.frozen
class UnreadableEvent:
    """A claimed row whose stored envelope this version cannot read (written by another version,
    or by hand): the relay fails it like a publish that failed, so it backs off and shows in
    ``craig outbox failing``, and holds up only the younger events of its own aggregate."""

    id: UUID
    attempts: int
    error: str


@attrs.frozen
class PublishFailure:
    id: UUID
    error: str
    retry_in: timedelta


class OutboxBatch(Protocol):
    """A claimed batch: its rows stay locked until the batch context exits (commit)."""

    @property
    def events(self) -> Sequence[OutboxRecord]:
        """Due events in staging order. An event whose aggregate has an older unpublished event
        outside this batch is never included, so per-aggregate order holds across relays."""
        ...

    @property
    def unreadable(self) -> Sequence[UnreadableEvent]:
        """Claimed rows whose envelope cannot be read; none of their aggregate's younger events
        is in :attr:`events`."""
        ...

    async def mark_published(self, ids: Sequence[UUID]) -> None:
        """One statement for the whole set."""
        ...

    async def mark_failed(self, failures: Sequence[PublishFailure]) -> None:
        """attempts + 1, last_error, next_attempt_at = now + retry_in; one statement."""
        ...


@attrs.frozen
class OutboxStats:
    pending: int
    oldest_pending_created_at: datetime | None
    failing: int
    now: datetime


class OutboxRelayStore(Protocol):
    """What the relay worker needs; every method runs in its own transaction."""

    def claim_batch(self, limit: int) -> AbstractAsyncContextManager[OutboxBatch]:
        """``FOR UPDATE SKIP LOCKED`` the oldest claimable events, at most ``limit``; commit on
        normal exit.

        Claimable: due, of an aggregate no other batch holds, and with no older event of its
        aggregate backing off after a failed publish. Events held back that way are skipped, not
        claimed and dropped, so however many of them come first, the batch fills with events
        that can go now (a failing event never stalls other aggregates)."""
        ...

    async def wait_for_events(self, timeout: timedelta) -> None:
        """Return when new events may have been staged (NOTIFY), or after ``timeout``."""
        ...

    async def purge_published(self, older_than: timedelta, batch_size: int) -> int: ...

    async def stats(self) -> OutboxStats: ...


# --- what a unit of work offers, for the use cases that name it -------------------------


class HasOutbox(Protocol):
    """A unit of work with ``outbox`` (a :class:`OutboxWriter` on its transaction)."""

    @property
    def outbox(self) -> OutboxWriter: ...
