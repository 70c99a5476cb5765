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
    """``uow.outbox``: stage events inside the caller's transaction."""

    async def stage(self, envelope: EventEnvelope) -> None:
        """Insert the event into the outbox. Nothing is published unless the transaction commits."""
        ...

    async def stage_many(self, envelopes: Sequence[EventEnvelope]) -> None:
        """Insert several events with one statement, in the given order."""
        ...


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
        """``FOR UPDATE SKIP LOCKED`` the oldest due events; commit on normal exit."""
        ...

    async def wait_for_events(self, timeout: timedelta) -> None:
        """Return when new events may have been staged (NOTIFY), or after ``timeout``."""
        ...

    async def purge_published(self, older_than: timedelta, batch_size: int) -> int: ...

    async def stats(self) -> OutboxStats: ...
