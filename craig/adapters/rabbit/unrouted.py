"""The unrouted queue on RabbitMQ: events no subscription's queue took, for ``craig status``."""

from __future__ import annotations

from faststream.rabbit import RabbitQueue

from craig.adapters.rabbit.bus import RabbitEventBus
from craig.ports.messaging import UnroutedEvents


class RabbitUnroutedEvents(UnroutedEvents):
    def __init__(self, bus: RabbitEventBus) -> None:
        self.bus = bus

    @property
    def location(self) -> str:
        where = f"RabbitMQ queue {self.bus.unrouted_queue}"
        if self.bus.has_alternate_exchange is False:
            return f"{where} (by the relay: {self.bus.events.name} has no alternate exchange, see the log)"
        return where

    async def count(self) -> int:
        await self.bus.connect([])
        queue = await self.bus.broker.declare_queue(RabbitQueue(self.bus.unrouted_queue, durable=True))
        declared = await queue.declare()  # a fresh declare: the cached result is stale
        return int(declared.message_count or 0)
