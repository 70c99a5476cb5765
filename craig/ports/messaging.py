"""Ports of event delivery: the publisher the outbox relay uses, and consumer subscriptions."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

import attrs

from craig.domain.events import EventEnvelope

if TYPE_CHECKING:
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
    """

    consumer: str
    event_types: tuple[str, ...]
    handler: EventHandler
    broadcast: bool = False


class Publisher(Protocol):
    """Publishes an envelope to the events exchange; returns only once the broker confirmed it."""

    async def publish(self, envelope: EventEnvelope) -> None:
        """Raises :class:`craig.ports.errors.BrokerUnavailable` when the publish is not confirmed."""
        ...
