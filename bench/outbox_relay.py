"""Outbox relay throughput against its ceilings, measured side by side in one run.

    .venv/bin/python -m bench.outbox_relay [--events 20000] [--rounds 3]

* ceiling: aio-pika publishing the same messages to the same exchange, persistent, ``mandatory``,
  with publisher confirms and a window of 256, then 1,024, publishes in flight (each publish
  awaits its own confirm), no database: what this broker takes;
* FastStream: ``RabbitBroker.publish`` with confirms, one message per call, 64 at once, no
  database: how the relay published before it had ``publish_many`` (for reference);
* relay: ``OutboxRelay.drain_once`` draining a pre-staged backlog from PostgreSQL (claim with
  SKIP LOCKED, ``publish_many`` with confirms, one UPDATE per batch, commit), with the default
  batch size and window, in as many lanes at once as a worker process runs
  (``OUTBOX_RELAYS_PER_PROCESS``; ``--relays`` changes it).

Rounds alternate (ceilings, FastStream, relay, then again) so drift on a shared machine hits
all; the ratios of the medians are what to read. Target: relay >= 0.8 x ceiling.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from datetime import UTC, datetime

import aio_pika
from faststream.rabbit import ExchangeType, RabbitBroker, RabbitExchange, RabbitQueue

from bench._services import BENCH_CIPHER, RABBIT_URL, exit_cleanly_on_sigterm, postgres_database, rabbit_available
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.outbox import PostgresOutboxRelayStore
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.adapters.rabbit.bus import RabbitEventBus
from craig.domain.constants import OUTBOX_BATCH_SIZE, OUTBOX_PUBLISH_CONCURRENCY, OUTBOX_RELAYS_PER_PROCESS
from craig.domain.events import EventEnvelope
from craig.usecases.events import OutboxRelay

#: FastStream's per-message publishes in flight (the relay's concurrency before publish_many).
FASTSTREAM_CONCURRENCY = 64
#: aio-pika's windows of publishes in flight for the ceiling.
WINDOWS = (256, 1024)
BATCH = OUTBOX_BATCH_SIZE


def _events(count: int) -> list[EventEnvelope]:
    now = datetime.now(UTC)
    return [
        EventEnvelope(
            id=uuid.uuid4(),
            source="craig-bench",
            type="bench.event",
            occurred_at=now,
            payload={"n": n, "text": "x" * 200},
            aggregate_type="bench",
            aggregate_id=f"agg-{n}",
        )
        for n in range(count)
    ]


async def _stage(database: PostgresDatabase, events: list[EventEnvelope]) -> None:
    for start in range(0, len(events), 1000):
        uow = PostgresUnitOfWork(database, BENCH_CIPHER)
        async with uow:
            for envelope in events[start : start + 1000]:
                await uow.outbox.stage(envelope)
            await uow.commit()


async def _aio_pika(
    channel: aio_pika.abc.AbstractChannel, exchange_name: str, events: list[EventEnvelope], window: int
) -> float:
    exchange = await channel.get_exchange(exchange_name, ensure=False)
    gate = asyncio.Semaphore(window)

    async def send(envelope: EventEnvelope) -> None:
        message = aio_pika.Message(
            json.dumps(envelope.to_json()).encode(),
            headers={"x-event-type": envelope.type, "x-source": envelope.source},
            content_type="application/json",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            message_id=str(envelope.id),
        )
        async with gate:
            await exchange.publish(message, routing_key=envelope.type, mandatory=True)

    started = time.perf_counter()
    await asyncio.gather(*(send(e) for e in events))
    return len(events) / (time.perf_counter() - started)


async def _faststream(broker: RabbitBroker, exchange: RabbitExchange, events: list[EventEnvelope]) -> float:
    gate = asyncio.Semaphore(FASTSTREAM_CONCURRENCY)

    async def send(envelope: EventEnvelope) -> None:
        async with gate:
            await broker.publish(
                json.dumps(envelope.to_json()).encode(),
                exchange=exchange,
                routing_key=envelope.type,
                persist=True,
                mandatory=False,
                message_id=str(envelope.id),
                headers={"x-event-type": envelope.type, "x-source": envelope.source},
                content_type="application/json",
            )

    started = time.perf_counter()
    await asyncio.gather(*(send(e) for e in events))
    return len(events) / (time.perf_counter() - started)


async def _relay(database: PostgresDatabase, bus: RabbitEventBus, events: list[EventEnvelope], lanes: int) -> float:
    await _stage(database, events)
    relay = OutboxRelay(PostgresOutboxRelayStore(database), bus, batch_size=BATCH)
    started = time.perf_counter()
    published = 0

    async def lane() -> None:  # as the worker's relay loop runs each of its lanes
        nonlocal published
        while published < len(events):
            report = await relay.drain_once()
            if not report.claimed:
                return
            published += report.published

    await asyncio.gather(*(lane() for _ in range(lanes)))
    elapsed = time.perf_counter() - started
    assert published == len(events), f"relay published {published} of {len(events)}"
    return published / elapsed


def main(events: int, rounds: int, relays: int) -> None:
    if not rabbit_available():
        raise SystemExit("RabbitMQ is not answering on 127.0.0.1:5672 (run scripts/ensure-rabbitmq.sh)")
    with postgres_database() as url:
        figures = asyncio.run(measure(url, events, rounds, relays))
    median = {name: statistics.median(values) for name, values in figures.items()}
    relay = median["relay"]
    print(
        f"\n{events:,} events x {rounds} rounds; relay batch {BATCH}, window {OUTBOX_PUBLISH_CONCURRENCY}, "
        f"{relays} relay(s) at once (medians)"
    )
    for window in WINDOWS:
        name = f"aio-pika window {window}"
        print(f"ceiling: {name:<22} (confirms, no database): {median[name]:>8,.0f} msg/s")
    print(
        f"FastStream, one per call, {FASTSTREAM_CONCURRENCY} at once (confirms):    {median['faststream']:>8,.0f} msg/s"
    )
    print(f"outbox relay (PostgreSQL -> RabbitMQ, confirms, commit): {relay:>8,.0f} events/s")
    for window in WINDOWS:
        ratio = relay / median[f"aio-pika window {window}"]
        print(f"relay / aio-pika window {window} = {ratio:.2f}  (target >= 0.80)")
    print(f"relay / FastStream per-message = {relay / median['faststream']:.2f}")


async def measure(url: str, events: int, rounds: int, relays: int) -> dict[str, list[float]]:
    tag = uuid.uuid4().hex[:8]
    exchange_name = f"craig.bench.{tag}"
    database = PostgresDatabase(url, pool_size=5)
    bus = RabbitEventBus(
        RABBIT_URL,
        events_exchange=exchange_name,
        dlx_exchange=f"{exchange_name}.dlx",
        queue_prefix=f"craig.bench.{tag}",
        instance_id="bench",
    )
    await bus.connect([])
    # A consumer-less queue bound to the exchange, as in production: messages are routed and
    # persisted, not dropped. Purged after every measurement.
    queue = await bus.broker.declare_queue(RabbitQueue(f"craig.bench.{tag}.sink", durable=True))
    await queue.bind(exchange_name, routing_key="#")
    exchange = RabbitExchange(exchange_name, type=ExchangeType.TOPIC, durable=True)
    connection = await aio_pika.connect_robust(RABBIT_URL)
    channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
    figures: dict[str, list[float]] = {f"aio-pika window {w}": [] for w in WINDOWS}
    figures |= {"faststream": [], "relay": []}
    try:
        for round_ in range(rounds):
            for window in WINDOWS:
                figures[f"aio-pika window {window}"].append(
                    await _aio_pika(channel, exchange_name, _events(events), window)
                )
                await queue.purge()
            figures["faststream"].append(await _faststream(bus.broker, exchange, _events(events)))
            await queue.purge()
            figures["relay"].append(await _relay(database, bus, _events(events), relays))
            await queue.purge()
            print(
                f"round {round_ + 1}: " + ", ".join(f"{name} {values[-1]:,.0f}/s" for name, values in figures.items())
            )
    finally:
        await connection.close()
        await queue.delete(if_unused=False, if_empty=False)
        unrouted = await bus.broker.declare_queue(RabbitQueue(bus.unrouted_queue, durable=True))
        await unrouted.delete(if_unused=False, if_empty=False)
        for name in (exchange_name, f"{exchange_name}.dlx"):
            await (await bus.broker.declare_exchange(RabbitExchange(name, type=ExchangeType.TOPIC))).delete()
        await (await bus.broker.declare_exchange(bus.unrouted_exchange)).delete()
        await bus.close()
        await database.dispose()
    return figures


if __name__ == "__main__":
    exit_cleanly_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--relays", type=int, default=OUTBOX_RELAYS_PER_PROCESS, help="relay lanes at once")
    args = parser.parse_args()
    main(args.events, args.rounds, args.relays)
