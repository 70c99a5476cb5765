"""The unrouted queue on RabbitMQ: events no subscription's queue took, for ``craig status`` and
``craig unrouted``.

Events are read with ``basic.get`` without acknowledging, one at a time, until a run has removed
enough; the ones not removed are given back with ``nack(requeue=True)`` when it ends. One that
``take``'s handler accepts (a replay re-published it, confirmed, or an operator discarded it) is
acknowledged only then, so a crash in between leaves it here: offered again, and a replay's
second publish is deduplicated by the consumers' inbox rows.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from uuid import UUID

import attrs
from aio_pika.abc import AbstractIncomingMessage
from faststream.rabbit import RabbitQueue

from craig.adapters.rabbit.bus import RabbitEventBus
from craig.adapters.rabbit.dead_letters import put_back, take_messages
from craig.domain.constants import UNROUTED_SCAN_MAX_EVENTS
from craig.domain.events import EventEnvelope
from craig.ports.messaging import UnroutedEvent, UnroutedEvents


def _event(message: AbstractIncomingMessage) -> UnroutedEvent:
    try:
        envelope = EventEnvelope.from_json(json.loads(message.body))
    except Exception:
        return UnroutedEvent(event_id=UUID(int=0), event_type="unparseable", envelope=None)
    traceparent = (message.headers or {}).get("traceparent")
    if isinstance(traceparent, str) and traceparent:  # the trace the event was published in
        envelope = attrs.evolve(envelope, traceparent=traceparent)
    return UnroutedEvent(event_id=envelope.id, event_type=envelope.type, envelope=envelope)


class RabbitUnroutedEvents(UnroutedEvents):
    def __init__(self, bus: RabbitEventBus) -> None:
        self.bus = bus

    @property
    def location(self) -> str:
        where = f"RabbitMQ queue {self.bus.unrouted_queue}"
        if self.bus.has_alternate_exchange is False:
            return f"{where} (by the relay: {self.bus.events.name} has no alternate exchange, see the log)"
        return where

    async def _queue(self) -> Any:
        await self.bus.connect([])
        return await self.bus.broker.declare_queue(RabbitQueue(self.bus.unrouted_queue, durable=True))

    async def count(self) -> int:
        declared = await (await self._queue()).declare()  # a fresh declare: the cached result is stale
        return int(declared.message_count or 0)

    async def peek(self, limit: int) -> list[UnroutedEvent]:
        taken = await take_messages(await self._queue(), limit)
        try:
            return [_event(message) for message in taken]
        finally:
            await put_back(taken)

    async def take(
        self,
        event_ids: Sequence[UUID] | None,
        limit: int,
        handle: Callable[[UnroutedEvent], Awaitable[bool]],
    ) -> list[UnroutedEvent]:
        wanted = set(event_ids) if event_ids is not None else None
        queue = await self._queue()
        taken: list[AbstractIncomingMessage] = []
        removed: list[UnroutedEvent] = []
        try:
            # One at a time, until enough are removed: a message not removed stays held (not
            # acknowledged) until the end, so the queue does not hand it out again.
            while len(removed) < limit and len(taken) < UNROUTED_SCAN_MAX_EVENTS:
                message = await queue.get(no_ack=False, fail=False)
                if message is None:
                    break
                taken.append(message)
                event = _event(message)
                if wanted is not None and event.event_id not in wanted:
                    continue
                if await handle(event):
                    await message.ack()
                    removed.append(event)
        finally:
            await put_back([message for message in taken if not message.processed])  # whatever happened
        return removed
