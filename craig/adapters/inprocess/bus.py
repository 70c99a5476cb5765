"""The in-process bus of the memory and embedded profiles.

Its queues are the inbox table itself: publishing records a due delivery for every matching
subscription (``INSERT ... ON CONFLICT DO NOTHING``), and each consumer loop claims due rows
(``FOR UPDATE SKIP LOCKED`` with a lease) and delivers them in order. So a delivery survives a
crash exactly like the event did, retries wait out their backoff in ``next_attempt_at``, and
the dead letters are the inbox rows marked ``failed_at``. Same port, same retry and DLX
semantics as RabbitMQ; no broker to install.

An event no subscription takes is recorded under the reserved consumer ``craig.unrouted``
(never claimed), the counterpart of RabbitMQ's ``craig.unrouted`` queue; those rows are purged
with the processed ones after the inbox retention.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from uuid import UUID

import structlog

from craig.adapters.telemetry import SpanKind, originating, sane_request_id, span
from craig.domain.constants import (
    INPROCESS_BUS_BATCH_SIZE,
    INPROCESS_BUS_LEASE,
    INPROCESS_BUS_POLL_INTERVAL,
    INPROCESS_DEAD_LETTER_SCAN_MAX_ROWS,
    UNROUTED_SCAN_MAX_EVENTS,
    UNROUTED_TAKE_PAGE_ROWS,
)
from craig.domain.events import UNREADABLE_ENVELOPE, EventEnvelope
from craig.domain.routing import topic_matches
from craig.ports.inbox import InboxRecord, InboxStore
from craig.ports.messaging import (
    UNROUTED,
    DeadLetterInfo,
    DeadLetterQueue,
    Delivery,
    EventBus,
    Subscription,
    UnroutedEvent,
    UnroutedEvents,
    publish_each,
    unambiguous,
)

log = structlog.get_logger(__name__)

QUEUE_PREFIX = "inprocess"


def queue_name(consumer: str) -> str:
    return f"{QUEUE_PREFIX}.{consumer}"


class InProcessBus(EventBus):
    def __init__(
        self,
        inbox: InboxStore,
        *,
        instance_id: str,
        poll_interval: timedelta = INPROCESS_BUS_POLL_INTERVAL,
        batch_size: int = INPROCESS_BUS_BATCH_SIZE,
        lease: timedelta = INPROCESS_BUS_LEASE,
    ) -> None:
        self.inbox = inbox
        #: Deliveries are filed under ``Subscription.inbox_consumer(instance_id)``: the key the
        #: handler's idempotent inbox uses, so processing a delivery settles its row.
        self.instance_id = instance_id
        self.poll_interval = poll_interval
        self.batch_size = batch_size
        self.lease = lease
        self._routes: dict[str, tuple[str, ...]] = {}
        self._wake: dict[str, asyncio.Event] = {}
        self._tasks: list[asyncio.Task[None]] = []

    async def connect(self, subscriptions: Sequence[Subscription]) -> None:
        for subscription in subscriptions:
            consumer = subscription.inbox_consumer(self.instance_id)
            self._routes[consumer] = subscription.event_types
            self._wake.setdefault(consumer, asyncio.Event())

    async def publish(self, envelope: EventEnvelope) -> None:
        routed = False
        for consumer, patterns in self._routes.items():
            if any(topic_matches(pattern, envelope.type) for pattern in patterns):
                await self.inbox.enqueue(consumer, envelope, queue_name(consumer))
                self._wake[consumer].set()
                routed = True
        if not routed:
            await self.inbox.enqueue(UNROUTED, envelope, UNROUTED)

    async def publish_many(self, envelopes: Sequence[EventEnvelope], *, window: int) -> list[Exception | None]:
        """One :meth:`publish` after another: each is a short insert into the inbox table, and
        one at a time keeps a batch to one pooled connection at once (``window`` is a bound)."""
        return await publish_each(self, envelopes, window=1)

    async def consume(self, consumers: Sequence[tuple[Subscription, Delivery]]) -> None:
        await self.connect([subscription for subscription, _ in consumers])
        for subscription, delivery in consumers:
            consumer = subscription.inbox_consumer(self.instance_id)
            task = asyncio.create_task(self._run(consumer, delivery), name=f"inbox:{consumer}")
            self._tasks.append(task)
            if subscription.on_connected is not None:  # never disconnected afterwards
                subscription.on_connected()

    async def _run(self, consumer: str, delivery: Delivery) -> None:
        wake = self._wake[consumer]
        while True:
            try:
                records = await self.inbox.claim_due([consumer], self.batch_size, self.lease)
                for record in records:
                    if record.envelope is not None:
                        await _delivered(delivery, record.envelope, record.queue or queue_name(consumer))
                    elif await self.inbox.dead_letter(consumer, record.event_id, UNREADABLE_ENVELOPE):
                        # Never deliverable (written by another version, or by hand): an operator's
                        # to look at (craig dlx list) and discard, not a row leased again forever.
                        log.error(
                            "inbox row dead-lettered: " + UNREADABLE_ENVELOPE,
                            consumer=consumer,
                            event_id=str(record.event_id),
                        )
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the lease brings the rows back; keep consuming
                log.warning("in-process delivery failed", consumer=consumer, error=str(error))
                records = []
            if not records:
                wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), self.poll_interval.total_seconds())

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    async def ping(self) -> None:
        return None


def _info(record: InboxRecord) -> DeadLetterInfo:
    return DeadLetterInfo(
        event_id=record.event_id,
        event_type=record.envelope.type if record.envelope else "unparseable",
        consumer=record.consumer,
        queue=record.queue or queue_name(record.consumer),
        retry_count=max(0, record.error_count - 1),
        last_error=record.last_error or "",
        first_failed_at=record.first_failed_at,
    )


class InboxDeadLetters(DeadLetterQueue):
    """Dead letters of the in-process bus: inbox rows marked ``failed_at``."""

    def __init__(self, inbox: InboxStore) -> None:
        self.inbox = inbox

    async def peek(self, limit: int) -> list[DeadLetterInfo]:
        return [_info(record) for record in await self.inbox.dead_letters(limit)]

    async def count(self) -> int:
        return (await self.inbox.stats()).dead

    async def replay(
        self,
        event_ids: Sequence[UUID] | None,
        limit: int,
        before_requeue: Callable[[DeadLetterInfo], Awaitable[None]],
    ) -> list[DeadLetterInfo]:
        wanted = set(event_ids) if event_ids is not None else None
        chosen: list[DeadLetterInfo] = []
        for record in await self.inbox.dead_letters(INPROCESS_DEAD_LETTER_SCAN_MAX_ROWS if wanted else limit):
            if wanted is not None and record.event_id not in wanted:
                continue
            if record.envelope is None:
                # Replayed, it would only be dead-lettered again: it is for craig dlx discard.
                log.warning(
                    "dead letter not replayed: " + UNREADABLE_ENVELOPE + "; discard it (craig dlx discard)",
                    event_id=str(record.event_id),
                    consumer=record.consumer,
                )
            elif len(chosen) < limit:
                chosen.append(_info(record))
        for letter in chosen:
            await before_requeue(letter)  # resetting the row IS the requeue; the consumer polls it
        return chosen

    async def discard(self, event_ids: Sequence[UUID], queue: str | None = None) -> list[DeadLetterInfo]:
        letters = [_info(r) for r in await self.inbox.dead_letters(INPROCESS_DEAD_LETTER_SCAN_MAX_ROWS)]
        return [
            letter
            for letter in unambiguous(letters, event_ids, queue)
            if await self.inbox.discard_dead(letter.consumer, letter.event_id)
        ]


class InboxUnroutedEvents(UnroutedEvents):
    """Unrouted events of the in-process bus: inbox rows of the reserved consumer."""

    def __init__(self, inbox: InboxStore) -> None:
        self.inbox = inbox

    @property
    def location(self) -> str:
        return f"inbox rows of consumer {UNROUTED}"

    async def count(self) -> int:
        return await self.inbox.waiting(UNROUTED)

    async def peek(self, limit: int) -> list[UnroutedEvent]:
        return [_unrouted(record) for record in await self.inbox.waiting_rows(UNROUTED, limit)]

    async def take(
        self,
        event_ids: Sequence[UUID] | None,
        limit: int,
        handle: Callable[[UnroutedEvent], Awaitable[bool]],
    ) -> list[UnroutedEvent]:
        wanted = set(event_ids) if event_ids is not None else None
        removed: list[UnroutedEvent] = []
        scanned = 0
        after: tuple[datetime, UUID] | None = None
        # Page by page (the oldest UNROUTED_SCAN_MAX_EVENTS at most): the whole scan at once held
        # up to 100,000 envelopes in memory.
        while scanned < UNROUTED_SCAN_MAX_EVENTS and len(removed) < limit:
            page = min(UNROUTED_TAKE_PAGE_ROWS, UNROUTED_SCAN_MAX_EVENTS - scanned)
            rows = await self.inbox.waiting_rows(UNROUTED, page, after=after)
            for row in rows:
                if len(removed) >= limit:
                    break
                if wanted is not None and row.event_id not in wanted:
                    continue
                # The row is the event: removed once handled (a crash in between offers it again,
                # and a replay's re-publish is deduplicated by the consumers' inbox rows).
                event = _unrouted(row)
                if await handle(event) and await self.inbox.delete_waiting(UNROUTED, event.event_id):
                    removed.append(event)
            if len(rows) < page:
                break
            scanned += len(rows)
            after = rows[-1].waiting_key
        return removed


def _unrouted(record: InboxRecord) -> UnroutedEvent:
    if record.envelope is None:
        return UnroutedEvent(event_id=record.event_id, event_type="unparseable", envelope=None)
    return UnroutedEvent(event_id=record.event_id, event_type=record.envelope.type, envelope=record.envelope)


async def _delivered(delivery: Delivery, envelope: EventEnvelope, queue: str) -> None:
    """As the RabbitMQ bus delivers: bound to the event's correlation id, in a ``consume`` span
    that continues the trace the event was staged in (no broker hop, so no publish span)."""
    with (
        originating(sane_request_id(envelope.correlation_id)),
        span(f"consume {envelope.type}", kind=SpanKind.CONSUMER, parent=envelope.traceparent),
    ):
        await delivery(envelope, queue)
