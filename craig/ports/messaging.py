"""Ports of event delivery: the publisher the outbox relay uses, and consumer subscriptions."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Protocol
from uuid import UUID

import attrs

from craig.domain.events import EventEnvelope
from craig.ports.unit_of_work import UnitOfWork

#: A consumer's handler. It runs inside the inbox's unit of work: its database effects commit
#: in the same transaction as the "processed" mark. It may run more than once for one event
#: (after a crash or a redelivery), so it must be safe to repeat.
EventHandler = Callable[[EventEnvelope, "UnitOfWork"], Awaitable[None]]


class NonRetryable(Exception):
    """Raise from a handler when retrying cannot help (a payload that does not parse): the
    message goes to the dead-letter exchange at once."""


@attrs.frozen
class Subscription:
    """A consumer: its stable name, the event types it wants, and its handler.

    ``event_types`` are AMQP topic patterns (``placements.*``, ``rules.cache_invalidated``).
    With ``broadcast`` every running instance receives every event (cache invalidation);
    otherwise instances share the work (competing consumers).

    ``on_connected`` runs each time the bus has (re)attached the subscription: once consuming
    starts, and again after every lost and re-established broker connection. A broadcast queue
    lives only as long as its instance's connection, so events published while it was gone never
    reach that instance; a subscriber that keeps derived state (a cache) drops it here.
    """

    consumer: str
    event_types: tuple[str, ...]
    handler: EventHandler
    broadcast: bool = False
    on_connected: Callable[[], object] | None = None

    def inbox_consumer(self, instance_id: str) -> str:
        """The inbox key: shared by all instances, or one per instance for a broadcast."""
        return f"{self.consumer}@{instance_id}" if self.broadcast else self.consumer


#: Where a bus keeps the events no subscription takes: the RabbitMQ queue ``<prefix>.unrouted``
#: (``craig.unrouted`` by default), and the in-process bus's inbox rows under this consumer key.
UNROUTED = "craig.unrouted"


class Publisher(Protocol):
    """Publishes an envelope to the events exchange; returns only once the broker confirmed it."""

    async def publish(self, envelope: EventEnvelope) -> None:
        """Raises :class:`craig.ports.errors.BrokerUnavailable` when the publish is not confirmed.

        Confirmed means kept: by the queue of every subscription that takes the event, or, when
        none does, by the bus's durable unrouted queue (:class:`UnroutedEvents`). An event is
        never confirmed into nothing."""
        ...

    async def publish_many(self, envelopes: Sequence[EventEnvelope], *, window: int) -> list[Exception | None]:
        """Publish every envelope, at most ``window`` of them in flight at once (unconfirmed);
        one outcome per envelope, in the same order: None once the broker confirmed it (as
        :meth:`publish` means it), else why not. A failed publish never raises here: it is its
        envelope's outcome, and the others go on.

        The envelopes are published in no particular order among themselves: a caller that
        needs order (the relay, per aggregate) passes at most one envelope of each ordered
        sequence. This default publishes them one :meth:`publish` each, ``window`` at a time."""
        return await publish_each(self, envelopes, window=window)


async def publish_each(
    publisher: Publisher, envelopes: Sequence[EventEnvelope], *, window: int
) -> list[Exception | None]:
    """:meth:`Publisher.publish_many` as one :meth:`Publisher.publish` per envelope, at most
    ``window`` of them in flight."""
    gate = asyncio.Semaphore(max(1, window))

    async def one(envelope: EventEnvelope) -> Exception | None:
        async with gate:
            try:
                await publisher.publish(envelope)
            except Exception as error:
                return error
            return None

    return list(await asyncio.gather(*(one(envelope) for envelope in envelopes)))


# --- consuming -------------------------------------------------------------------------------


@attrs.frozen
class Acknowledge:
    """Done (processed now, or before): remove the message."""


@attrs.frozen
class RedeliverLater:
    """Deliver again after ``delay`` (broker-side; the consumer never sleeps holding it)."""

    delay: timedelta
    retry_count: int
    error: str
    first_failed_at: datetime | None


@attrs.frozen
class SendToDeadLetters:
    """Give up: publish to the dead-letter exchange with the retry headers, then remove it."""

    retry_count: int
    error: str
    first_failed_at: datetime | None


DeliveryOutcome = Acknowledge | RedeliverLater | SendToDeadLetters
#: What a bus calls for each message of a subscription, with the queue it came from (the inbox
#: use case, wired by the composition root).
Delivery = Callable[[EventEnvelope, str], Awaitable[DeliveryOutcome]]


class EventBus(Publisher, Protocol):
    """A broker: publishes events and delivers them to subscriptions with retry and DLX semantics.

    Each non-broadcast subscription is one durable queue shared by every instance (competing
    consumers); a broadcast subscription gets one queue per instance. A delivery that asks to be
    redelivered comes back after its delay; one sent to dead letters lands on the DLX with the
    headers ``x-original-queue``, ``x-retry-count``, ``x-last-error`` and ``x-first-failed-at``.
    """

    async def connect(self, subscriptions: Sequence[Subscription]) -> None:
        """Connect and declare the topology, including the durable queues of every shared
        subscription (so events published before its consumers start are kept); raises
        ``BrokerUnavailable`` naming the broker."""
        ...

    async def consume(self, consumers: Sequence[tuple[Subscription, Delivery]]) -> None:
        """Start delivering; returns once consuming has started, after calling each
        subscription's ``on_connected``, which it calls again after every reconnection."""
        ...

    async def close(self) -> None: ...

    async def ping(self) -> None:
        """Raise ``BrokerUnavailable`` when the broker cannot be reached."""
        ...


@attrs.frozen(kw_only=True)
class UnroutedEvent:
    """An event no subscription took: its envelope, or None for a message that is not an event
    Craig can read (then ``event_type`` is ``unparseable``, and on RabbitMQ, where the message
    may carry no id either, ``event_id`` is the nil UUID)."""

    event_id: UUID
    event_type: str
    envelope: EventEnvelope | None


class UnroutedEvents(Protocol):
    """The events a bus accepted that no subscription took, kept for operators (``craig status``,
    ``craig_unrouted_events``, ``craig unrouted``): an event type nobody binds, or a consumer
    whose queue is gone."""

    @property
    def location(self) -> str:
        """Where an operator finds them."""
        ...

    async def count(self) -> int: ...

    async def peek(self, limit: int) -> list[UnroutedEvent]:
        """Up to ``limit`` of them, oldest first, without removing any."""
        ...

    async def take(
        self,
        event_ids: Sequence[UUID] | None,
        limit: int,
        handle: Callable[[UnroutedEvent], Awaitable[bool]],
    ) -> list[UnroutedEvent]:
        """Offer those of ``event_ids`` (or all), oldest first, to ``handle`` one at a time,
        until ``limit`` are removed: each it answers True for is removed, only once it has
        answered, and the others stay where they are (and do not count toward ``limit``). Looks
        at the oldest ``UNROUTED_SCAN_MAX_EVENTS`` only. Returns the removed ones. An error in
        ``handle`` stops the run and leaves that event and the rest in place.

        On RabbitMQ the events looked at are held (unacknowledged) until the run ends: the
        queue's count dips meanwhile, and another run does not see them."""
        ...


@attrs.frozen(kw_only=True)
class DeadLetterInfo:
    event_id: UUID
    event_type: str
    consumer: str
    queue: str
    retry_count: int
    last_error: str
    first_failed_at: datetime | None


def unambiguous(
    letters: Sequence[DeadLetterInfo], event_ids: Sequence[UUID], queue: str | None
) -> list[DeadLetterInfo]:
    """Of ``letters``, those of ``event_ids`` (and of ``queue``, when given) whose id no other of
    them shares: what :meth:`DeadLetterQueue.discard` may remove."""
    wanted = set(event_ids)
    chosen = [x for x in letters if x.event_id in wanted and (queue is None or x.queue == queue)]
    per_id = Counter(x.event_id for x in chosen)
    return [x for x in chosen if per_id[x.event_id] == 1]


class DeadLetterQueue(Protocol):
    """What the dead-letter exchange holds, for operators (``craig dlx``)."""

    async def peek(self, limit: int) -> list[DeadLetterInfo]:
        """Dead letters in their original order, without removing them."""
        ...

    async def count(self) -> int: ...

    async def replay(
        self,
        event_ids: Sequence[UUID] | None,
        limit: int,
        before_requeue: Callable[[DeadLetterInfo], Awaitable[None]],
    ) -> list[DeadLetterInfo]:
        """Send dead letters (those of ``event_ids``, or all) back to their original queue, in
        their original order, at most ``limit``. ``before_requeue`` runs first for each (it gives
        the inbox row a fresh retry budget); a letter is removed only once requeued."""
        ...

    async def discard(self, event_ids: Sequence[UUID], queue: str | None = None) -> list[DeadLetterInfo]:
        """Remove the dead letters of ``event_ids`` (of ``queue`` only, when given) for good: an
        operator gave up on them (their queue is gone, or they can never succeed). An id that
        matches several letters (one event dead-lettered by several consumers, or messages that
        are no event at all) removes none of them. The ones removed."""
        ...
