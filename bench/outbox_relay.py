"""Outbox relay throughput against its ceiling, measured side by side in one run.

    .venv/bin/python -m bench.outbox_relay [--events 20000] [--rounds 3]

* ceiling: raw FastStream publish-with-confirms of the same messages to the same exchange, no
  database, the same concurrency the relay uses;
* relay: ``OutboxRelay.drain_once`` draining a pre-staged backlog from PostgreSQL (claim with
  SKIP LOCKED, publish with confirms, one UPDATE per batch, commit).

Rounds alternate (ceiling, relay, ceiling, relay, ...) so drift on a shared machine hits both;
the ratio of the medians is what to read. Target: relay >= 0.8 x ceiling.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from datetime import UTC, datetime

from faststream.rabbit import ExchangeType, RabbitBroker, RabbitExchange, RabbitQueue

from bench._services import BENCH_CIPHER, RABBIT_URL, exit_cleanly_on_sigterm, postgres_database, rabbit_available
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.outbox import PostgresOutboxRelayStore
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.adapters.rabbit.bus import RabbitEventBus
from craig.domain.events import EventEnvelope
from craig.usecases.events import OutboxRelay

CONCURRENCY = 64
BATCH = 500


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


async def _ceiling(broker: RabbitBroker, exchange: RabbitExchange, events: list[EventEnvelope]) -> float:
    gate = asyncio.Semaphore(CONCURRENCY)

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


async def _relay(database: PostgresDatabase, bus: RabbitEventBus, events: list[EventEnvelope]) -> float:
    await _stage(database, events)
    relay = OutboxRelay(PostgresOutboxRelayStore(database), bus, batch_size=BATCH, concurrency=CONCURRENCY)
    started = time.perf_counter()
    published = 0
    while published < len(events):
        report = await relay.drain_once()
        if not report.claimed:
            break
        published += report.published
    elapsed = time.perf_counter() - started
    assert published == len(events), f"relay published {published} of {len(events)}"
    return published / elapsed


def main(events: int, rounds: int) -> None:
    if not rabbit_available():
        raise SystemExit("RabbitMQ is not answering on 127.0.0.1:5672 (run scripts/ensure-rabbitmq.sh)")
    with postgres_database() as url:
        ceiling, relay = asyncio.run(measure(url, events, rounds))
    c, r = statistics.median(ceiling), statistics.median(relay)
    print(f"\n{events:,} events x {rounds} rounds, concurrency {CONCURRENCY}, batch {BATCH}")
    print(f"ceiling (FastStream publish with confirms, no database): {c:,.0f} msg/s (median)")
    print(f"outbox relay (PostgreSQL -> RabbitMQ, confirms, commit):  {r:,.0f} events/s (median)")
    print(f"relay / ceiling = {r / c:.2f}  (target >= 0.80)")


async def measure(url: str, events: int, rounds: int) -> tuple[list[float], list[float]]:
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
    # persisted, not dropped. Purged between rounds.
    queue = await bus.broker.declare_queue(RabbitQueue(f"craig.bench.{tag}.sink", durable=True))
    await queue.bind(exchange_name, routing_key="#")
    exchange = RabbitExchange(exchange_name, type=ExchangeType.TOPIC, durable=True)
    ceiling: list[float] = []
    relay: list[float] = []
    try:
        for round_ in range(rounds):
            ceiling.append(await _ceiling(bus.broker, exchange, _events(events)))
            await queue.purge()
            relay.append(await _relay(database, bus, _events(events)))
            await queue.purge()
            print(f"round {round_ + 1}: ceiling {ceiling[-1]:,.0f} msg/s, relay {relay[-1]:,.0f} events/s")
    finally:
        await queue.delete(if_unused=False, if_empty=False)
        unrouted = await bus.broker.declare_queue(RabbitQueue(bus.unrouted_queue, durable=True))
        await unrouted.delete(if_unused=False, if_empty=False)
        for name in (exchange_name, f"{exchange_name}.dlx"):
            await (await bus.broker.declare_exchange(RabbitExchange(name, type=ExchangeType.TOPIC))).delete()
        await (await bus.broker.declare_exchange(bus.unrouted_exchange)).delete()
        await bus.close()
        await database.dispose()
    return ceiling, relay


if __name__ == "__main__":
    exit_cleanly_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    main(args.events, args.rounds)
