"""A relay in its own process, for the SIGKILL test: ``python -m tests.support.relay_process``.

It drains the outbox of DB_URL to the exchange EXCHANGE on AMQP_URL, slowly (a pause per
publish, so a kill lands mid-batch), printing one line per publish.
"""

from __future__ import annotations

import asyncio
import sys

from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.outbox import PostgresOutboxRelayStore
from craig.adapters.rabbit.bus import RabbitEventBus
from craig.domain.events import EventEnvelope
from craig.ports.messaging import Publisher
from craig.usecases.events import OutboxRelay


class SlowPublisher(Publisher):
    def __init__(self, bus: RabbitEventBus) -> None:
        self.bus = bus

    async def publish(self, envelope: EventEnvelope) -> None:
        await self.bus.publish(envelope)
        print(f"published {envelope.id}", flush=True)
        await asyncio.sleep(0.01)


async def main(db_url: str, amqp_url: str, exchange: str, dlx_exchange: str, prefix: str) -> None:
    """``dlx_exchange``: the test's own (its fixture deletes it afterwards, with the rest)."""
    database = PostgresDatabase(db_url)
    bus = RabbitEventBus(
        amqp_url, events_exchange=exchange, dlx_exchange=dlx_exchange, queue_prefix=prefix, instance_id="killme"
    )
    await bus.connect([])
    relay = OutboxRelay(PostgresOutboxRelayStore(database), SlowPublisher(bus), batch_size=100, concurrency=1)
    while (await relay.drain_once()).claimed:
        pass


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
