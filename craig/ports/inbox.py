"""Ports of the idempotent inbox (the ``event_inbox`` table, used by ``handle_idempotently``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol
from uuid import UUID

import attrs

from craig.domain.events import EventEnvelope


@attrs.frozen(kw_only=True)
class InboxRecord:
    consumer: str
    event_id: UUID
    envelope: EventEnvelope | None
    queue: str | None
    received_at: datetime
    processed_at: datetime | None
    failed_at: datetime | None
    error_count: int
    last_error: str | None
    first_failed_at: datetime | None
    #: When the row is due next (an unrouted row's arrival): with ``event_id``, its place in
    #: :meth:`InboxStore.waiting_rows`'s order.
    next_attempt_at: datetime

    @property
    def waiting_key(self) -> tuple[datetime, UUID]:
        """The row's place among the waiting rows (``after=`` for the next page)."""
        return (self.next_attempt_at, self.event_id)


class InboxRepository(Protocol):
    """``uow.inbox``: the inbox row of one (consumer, event), inside the unit of work.

    The row is locked from :meth:`begin_attempt` to commit, so two deliveries of one event to one
    consumer never run at the same time: the second waits, then sees it processed.
    """

    async def begin_attempt(self, consumer: str, envelope: EventEnvelope, queue: str) -> InboxRecord:
        """Insert the row if missing, lock it, stamp ``attempt_started_at``; return it."""
        ...

    async def mark_processed(self, consumer: str, event_id: UUID) -> None: ...

    async def record_failure(
        self, consumer: str, event_id: UUID, error: str, *, retry_in: timedelta | None
    ) -> InboxRecord:
        """``error_count + 1``, ``last_error``, ``first_failed_at`` (kept once set) and either
        ``next_attempt_at = now + retry_in`` or, when ``retry_in`` is None, ``failed_at = now``."""
        ...

    async def reset_for_replay(self, consumer: str, event_id: UUID) -> bool:
        """A fresh retry budget for a dead letter: error_count 0, failed_at cleared, due now."""
        ...


@attrs.frozen
class InboxStats:
    retrying: int
    dead: int
    processed: int


class InboxStore(Protocol):
    """Inbox operations in their own transactions (queues of the in-process bus, operators)."""

    async def enqueue(self, consumer: str, envelope: EventEnvelope, queue: str) -> bool:
        """Record a delivery due now; False when (consumer, event) is already known."""
        ...

    async def claim_due(self, consumers: Sequence[str], limit: int, lease: timedelta) -> list[InboxRecord]:
        """Rows due for (re)delivery, oldest first, leased (``next_attempt_at = now + lease``) with
        ``FOR UPDATE SKIP LOCKED`` so concurrent claimers never share one."""
        ...

    async def dead_letters(self, limit: int) -> list[InboxRecord]:
        """Dead-lettered rows, in their original order."""
        ...

    async def dead_letter(self, consumer: str, event_id: UUID, error: str) -> bool:
        """Dead-letter a row that can never be delivered (its stored envelope is not one this
        version of Craig can read): ``failed_at`` now, ``last_error`` ``error``, so operators see it
        (``craig dlx list``) and can discard it. False when the row is gone, processed or dead
        already."""
        ...

    async def discard_dead(self, consumer: str, event_id: UUID) -> bool:
        """Delete a dead-lettered row (an operator gave up on it); False when there is none."""
        ...

    async def waiting_rows(
        self, consumer: str, limit: int, *, after: tuple[datetime, UUID] | None = None
    ) -> list[InboxRecord]:
        """Up to ``limit`` rows of ``consumer`` neither processed nor dead-lettered, oldest due
        first (the in-process bus's unrouted events, for operators); with ``after`` (the last
        row's :attr:`~InboxRecord.waiting_key`), those after it: the next page."""
        ...

    async def delete_waiting(self, consumer: str, event_id: UUID) -> bool:
        """Delete a row neither processed nor dead-lettered (an unrouted event an operator
        replayed or discarded); False when there is none."""
        ...

    async def waiting(self, consumer: str) -> int:
        """Rows of ``consumer`` neither processed nor dead-lettered."""
        ...

    async def stats(self) -> InboxStats:
        """``retrying`` is exact; ``dead`` and ``processed`` are exact up to
        ``STATS_EXACT_COUNT_MAX_ROWS`` and may be an estimate above it."""
        ...

    async def purge_processed(self, older_than: timedelta, batch_size: int) -> int:
        """Delete rows processed longer than ``older_than`` ago, and the in-process bus's unrouted
        events (consumer :data:`craig.ports.messaging.UNROUTED`) received that long ago; at most
        ``batch_size`` of each."""
        ...

    async def purge_broadcast(self, consumers: Sequence[str], older_than: timedelta, batch_size: int) -> int:
        """Leftovers of instances that are gone: delete rows of the per-instance inbox keys of the
        broadcast subscriptions named ``consumers`` (``<consumer>@<instance>``, see
        ``Subscription.inbox_consumer``) that were received more than ``older_than`` ago and are
        still unprocessed, or were dead-lettered more than ``older_than`` ago. Rows of other
        consumers are never touched; processed rows go through :meth:`purge_processed`. At most
        ``batch_size`` rows of each kind per call; returns how many were deleted."""
        ...


# --- what a unit of work offers, for the use cases that name it -------------------------


class HasInbox(Protocol):
    """A unit of work with ``inbox`` (a :class:`InboxRepository` on its transaction)."""

    @property
    def inbox(self) -> InboxRepository: ...
