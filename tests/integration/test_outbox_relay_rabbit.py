"""The outbox relay against real PostgreSQL and RabbitMQ: volume, several relays, order per
aggregate, and a relay killed mid-batch."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from collections import defaultdict
from datetime import UTC, datetime

import aio_pika
import pytest

from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.outbox import PostgresOutboxRelayStore
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.adapters.rabbit.bus import ALTERNATE_EXCHANGE, RabbitEventBus
from craig.domain.events import EventEnvelope
from craig.usecases.events import OutboxRelay
from tests.support.ciphers import TEST_CIPHER
from tests.support.services import BrokerNames

pytestmark = [pytest.mark.integration, pytest.mark.rabbit, pytest.mark.postgres]

AGGREGATES = 200
PER_AGGREGATE = 50  # 10,000 events


def _event(aggregate: str, n: int) -> EventEnvelope:
    return EventEnvelope(
        id=uuid.uuid4(),
        source="craig-tests",
        type="tests.sequenced",
        occurred_at=datetime.now(UTC),
        payload={"aggregate": aggregate, "n": n},
        aggregate_type="test",
        aggregate_id=aggregate,
    )


async def _stage_concurrently(database: PostgresDatabase, writers: int, aggregates: list[str], per: int) -> int:
    """Each writer owns some aggregates (writes to one aggregate are serialized, as row locks make
    them in the application) and stages their events in small transactions, all concurrently."""

    async def writer(owned: list[str]) -> None:
        for start in range(0, per, 5):
            uow = PostgresUnitOfWork(database, TEST_CIPHER)
            async with uow:
                for aggregate in owned:
                    for n in range(start, min(start + 5, per)):
                        await uow.outbox.stage(_event(aggregate, n))
                await uow.commit()

    chunks = [aggregates[i::writers] for i in range(writers)]
    await asyncio.gather(*(writer(chunk) for chunk in chunks))
    return len(aggregates) * per


async def _collector(url: str, names: BrokerNames) -> tuple[aio_pika.abc.AbstractRobustConnection, list[dict]]:
    names.queue("dead-letters")  # the buses declare it; deleted after the test
    connection = await aio_pika.connect_robust(url)
    channel = await connection.channel()
    exchange = await channel.declare_exchange(  # as Craig declares it
        names.events_exchange,
        aio_pika.ExchangeType.TOPIC,
        durable=True,
        arguments={ALTERNATE_EXCHANGE: names.unrouted_exchange},
    )
    queue = await channel.declare_queue(names.queue("collector"), durable=True)
    await queue.bind(exchange, routing_key="#")
    received: list[dict] = []

    async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        async with message.process():
            received.append(json.loads(message.body))

    await queue.consume(on_message)
    return connection, received


def _bus(url: str, names: BrokerNames, instance: str) -> RabbitEventBus:
    return RabbitEventBus(
        url,
        events_exchange=names.events_exchange,
        dlx_exchange=names.dlx_exchange,
        queue_prefix=names.queue_prefix,
        instance_id=instance,
    )


async def _wait_for(received: list[dict], count: int, *, messages: int = 0) -> None:
    """Until ``count`` distinct events and at least ``messages`` messages arrived (60 s at most)."""
    for _ in range(1200):
        if len({m["id"] for m in received}) >= count and len(received) >= messages:
            return
        await asyncio.sleep(0.05)


async def test_ten_thousand_events_two_relays_nothing_lost_order_per_aggregate_holds(
    pg_url: str, rabbit_url: str, broker_names: BrokerNames
) -> None:
    database = PostgresDatabase(pg_url, pool_size=20)
    connection, received = await _collector(rabbit_url, broker_names)
    buses = [_bus(rabbit_url, broker_names, f"relay-{i}") for i in range(2)]
    try:
        for bus in buses:
            await bus.connect([])
        aggregates = [f"agg-{i:03d}" for i in range(AGGREGATES)]
        relays = [OutboxRelay(PostgresOutboxRelayStore(database), bus, batch_size=500) for bus in buses]
        staging_done = asyncio.Event()
        batches = [0, 0]

        async def drain(index: int) -> None:
            relay = relays[index]
            while True:
                report = await relay.drain_once()
                batches[index] += 1 if report.published else 0
                if not report.claimed and staging_done.is_set():
                    return
                if not report.claimed:
                    await asyncio.sleep(0.02)

        drainers = [asyncio.create_task(drain(i)) for i in range(2)]
        total = await _stage_concurrently(database, 20, aggregates, PER_AGGREGATE)
        staging_done.set()
        await asyncio.gather(*drainers)
        await _wait_for(received, total)
    finally:
        for bus in buses:
            await bus.close()
        await connection.close()
        await database.dispose()

    assert len(received) == total == 10_000  # every event delivered, none twice
    assert len({m["id"] for m in received}) == total
    assert all(batches), f"both relays published: {batches}"
    sequence: dict[str, list[int]] = defaultdict(list)
    for message in received:
        sequence[message["aggregate_id"]].append(message["payload"]["n"])
    assert all(ns == list(range(PER_AGGREGATE)) for ns in sequence.values())


async def test_a_relay_killed_mid_batch_loses_nothing(pg_url: str, rabbit_url: str, broker_names: BrokerNames) -> None:
    database = PostgresDatabase(pg_url)
    connection, received = await _collector(rabbit_url, broker_names)
    staged = [_event(f"agg-{i % 10}", i // 10) for i in range(300)]
    uow = PostgresUnitOfWork(database, TEST_CIPHER)
    async with uow:
        for envelope in staged:
            await uow.outbox.stage(envelope)
        await uow.commit()

    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.relay_process",
            pg_url,
            rabbit_url,
            broker_names.events_exchange,
            broker_names.dlx_exchange,
            broker_names.queue_prefix,
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.getcwd(),
    )
    assert process.stdout is not None
    for _ in range(20):  # let it publish part of its first batch of 100
        assert process.stdout.readline().startswith("published"), "the relay process did not start"
    process.send_signal(signal.SIGKILL)
    process.wait()

    bus = _bus(rabbit_url, broker_names, "restarted")
    await bus.connect([])
    try:
        relay = OutboxRelay(PostgresOutboxRelayStore(database), bus, batch_size=100)
        while (await relay.drain_once()).claimed:
            pass
        # Every event, and the killed relay's 20 confirmed but unmarked publishes again (it waited
        # its whole minute for 320 distinct events, of 300).
        await _wait_for(received, len(staged), messages=len(staged) + 20)
    finally:
        await bus.close()
        await connection.close()
        await database.dispose()

    delivered = {m["id"] for m in received}
    assert delivered == {str(e.id) for e in staged}  # nothing lost
    # The killed relay's confirmed publishes (at least 20) were never marked: published again.
    assert len(received) >= len(staged) + 20
    store_stats = await PostgresOutboxRelayStore(PostgresDatabase(pg_url)).stats()
    assert store_stats.pending == 0
