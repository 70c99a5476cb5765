"""The RabbitMQ bus against messages and broker states Craig did not make, on real RabbitMQ:
bodies FastStream cannot decode, headers of the wrong type, two publishes with one message id,
and dead letters whose queue is gone."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import aio_pika
import pytest
import structlog

from craig.adapters.rabbit.bus import RabbitEventBus, Unroutable
from craig.adapters.rabbit.dead_letters import RabbitDeadLetters, put_back, take_messages
from craig.domain.events import EventEnvelope
from craig.ports.errors import BrokerUnavailable
from craig.ports.messaging import Acknowledge, DeadLetterInfo, DeliveryOutcome, Subscription
from craig.ports.unit_of_work import UnitOfWork
from tests.contract.test_event_bus import _event, _eventually
from tests.support.buses import rabbit_bus
from tests.support.services import BrokerNames
from tests.support.silent_servers import tcp_server

pytestmark = pytest.mark.integration


async def _ignore(envelope: EventEnvelope, uow: UnitOfWork) -> None:
    """The subscription's handler; these tests deliver through ``deliver`` below instead."""


@pytest.fixture
async def bus(rabbit_url: str, broker_names: BrokerNames) -> AsyncIterator[RabbitEventBus]:
    for name in ("c", *(f"c.retry.{n}" for n in range(1, 6)), "dead-letters", "gone", "kept"):
        broker_names.queue(name)
    bus = rabbit_bus(rabbit_url, broker_names)
    try:
        yield bus
    finally:
        await bus.close()


async def _publish_raw(url: str, queue: str, message: aio_pika.Message) -> None:
    connection = await aio_pika.connect(url, timeout=5)
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        await channel.default_exchange.publish(message, routing_key=queue)


async def _depth(url: str, queue: str) -> tuple[int, int]:
    """Ready messages, and consumers, of ``queue``."""
    connection = await aio_pika.connect(url, timeout=5)
    async with connection:
        declared = await (await connection.channel()).declare_queue(queue, passive=True)
        result = declared.declaration_result
        return int(result.message_count or 0), int(result.consumer_count or 0)


def _holds(get: Callable[[], Awaitable[object]], expected: object) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return await get() == expected

    return check


async def test_messages_faststream_cannot_decode_are_dead_lettered_not_left_unacknowledged(
    bus: RabbitEventBus, rabbit_url: str
) -> None:
    delivered: list[uuid.UUID] = []

    async def deliver(envelope: EventEnvelope, queue: str) -> DeliveryOutcome:
        delivered.append(envelope.id)
        return Acknowledge()

    subscription = Subscription("c", ("tests.*",), _ignore)
    await bus.connect([subscription])
    await bus.consume([(subscription, deliver)])
    work = bus.work_queue(subscription)
    good = _event()
    hostile = [
        aio_pika.Message(b"{not json", content_type="application/json", message_id="bad-json"),
        aio_pika.Message(b"\xff\xfe", content_type="text/plain", message_id="bad-text"),
        aio_pika.Message(b'{"a": 1}', content_type="application/json", message_id="not-an-envelope"),
    ]
    for message in hostile:
        await _publish_raw(rabbit_url, work, message)
    # A good event whose retry-count header is not a number is still delivered.
    await _publish_raw(
        rabbit_url,
        work,
        aio_pika.Message(json.dumps(good.to_message()).encode(), headers={"x-retry-count": "many"}),
    )
    dead = RabbitDeadLetters(bus)
    await _eventually(_holds(dead.count, 3), "three dead letters")
    await _eventually(_holds(lambda: _depth(rabbit_url, work), (0, 1)), "the work queue empty")

    async def handled() -> bool:  # taken from the queue is not yet handed to the handler
        return bool(delivered)

    await _eventually(handled, "the good event delivered")
    assert delivered == [good.id]
    letters = await dead.peek(10)
    assert {letter.event_type for letter in letters} == {"unparseable"}
    assert all("unparseable message" in letter.last_error for letter in letters)


async def test_two_publishes_with_one_message_id_each_get_their_own_return(
    bus: RabbitEventBus, rabbit_url: str, broker_names: BrokerNames
) -> None:
    """aiormq matches a return to the latest publish with its message id: the bus never has two
    in flight, so the publish to a missing queue fails and the other one is confirmed."""
    await bus.connect([])
    kept = f"{broker_names.queue_prefix}.kept"
    connection = await aio_pika.connect(rabbit_url, timeout=5)
    async with connection:
        await (await connection.channel()).declare_queue(kept, durable=True)
    outcomes = await asyncio.gather(
        bus._send(b"{}", queue=f"{broker_names.queue_prefix}.gone", message_id="one-event"),
        bus._send(b"{}", queue=kept, message_id="one-event"),
        return_exceptions=True,
    )
    assert isinstance(outcomes[0], Unroutable) and outcomes[1] is None, outcomes
    assert (await _depth(rabbit_url, kept))[0] == 1
    assert not bus._in_flight


async def test_a_replay_leaves_letters_whose_queue_is_gone_and_replays_the_others(
    bus: RabbitEventBus, rabbit_url: str, broker_names: BrokerNames
) -> None:
    await bus.connect([])
    prefix = broker_names.queue_prefix
    kept = f"{prefix}.kept"
    first, second = uuid.UUID(int=1), uuid.UUID(int=2)  # replayed in id order: the gone one first
    connection = await aio_pika.connect(rabbit_url, timeout=5)
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        await channel.declare_queue(kept, durable=True)
        dlx = await channel.get_exchange(broker_names.dlx_exchange)
        for event_id, queue in ((first, f"{prefix}.rules-cache.craig-stopped"), (second, kept)):
            body = json.dumps({"id": str(event_id), "type": "tests.happened"}).encode()
            headers = {"x-original-queue": queue, "x-consumer": "c", "x-retry-count": 5}
            await dlx.publish(aio_pika.Message(body, message_id=str(event_id), headers=headers), routing_key=queue)
    dead = RabbitDeadLetters(bus)
    await _eventually(_holds(dead.count, 2), "two dead letters")
    reset: list[uuid.UUID] = []

    async def fresh_budget(letter: DeadLetterInfo) -> None:
        reset.append(letter.event_id)

    with structlog.testing.capture_logs() as logs:
        replayed = await dead.replay(None, 10, fresh_budget)
    assert [letter.event_id for letter in replayed] == [second] and reset == [second]
    assert (await _depth(rabbit_url, kept))[0] == 1
    assert [letter.event_id for letter in await dead.peek(10)] == [first]
    warned = [line for line in logs if "not replayed" in line["event"]]
    assert [line["event_id"] for line in warned] == [str(first)]


async def test_a_dead_letter_queue_deleted_by_hand_is_declared_again_and_the_letter_kept(
    bus: RabbitEventBus, rabbit_url: str
) -> None:
    subscription = Subscription("c", ("tests.*",), _ignore)

    async def deliver(envelope: EventEnvelope, queue: str) -> DeliveryOutcome:
        return Acknowledge()

    await bus.connect([subscription])
    await bus.consume([(subscription, deliver)])
    connection = await aio_pika.connect(rabbit_url, timeout=5)
    async with connection:
        await (await connection.channel()).queue_delete(bus.dead_letter_queue)
    with structlog.testing.capture_logs() as logs:
        await _publish_raw(rabbit_url, bus.work_queue(subscription), aio_pika.Message(b"poison"))
        dead = RabbitDeadLetters(bus)
        await _eventually(_holds(dead.count, 1), "the letter in the dead-letter queue, declared again")
    assert [line["queue"] for line in logs if "dead-letter queue was gone" in line["event"]] == [bus.dead_letter_queue]
    assert not [line for line in logs if "could not settle" in line["event"]]


async def test_a_broker_that_accepts_and_never_answers_is_unavailable_not_a_hang(broker_names: BrokerNames) -> None:
    async with tcp_server() as silent:
        bus = RabbitEventBus(
            f"amqp://guest:guest@127.0.0.1:{silent.port}/",
            events_exchange=broker_names.events_exchange,
            dlx_exchange=broker_names.dlx_exchange,
            queue_prefix=broker_names.queue_prefix,
            instance_id="silent",
            connect_timeout_seconds=0.5,
        )
        try:
            with pytest.raises(BrokerUnavailable) as refused:
                await bus.connect([])
            # The reason names the timeout (its own text is empty: the message said "…/): ;").
            assert str(refused.value).endswith(f"cannot reach RabbitMQ (amqp://127.0.0.1:{silent.port}/): TimeoutError")
            # aio-pika gave up: no reconnect loop is left running (a cancelled connect leaves one).
            loops = [t for t in asyncio.all_tasks() if "connection_factory" in repr(t.get_coro())]
            assert loops == [] and len(silent.accepted) == 1
        finally:
            await bus.close()


async def test_listing_gives_every_letter_back_in_its_place(
    bus: RabbitEventBus, rabbit_url: str, broker_names: BrokerNames
) -> None:
    """Listing takes every letter (unacknowledged) to sort them by id, then gives each back:
    all are counted again, and a second reading finds the queue's order unchanged."""
    await bus.connect([])
    prefix = broker_names.queue_prefix
    ids = [uuid.uuid4() for _ in range(500)]  # random ids: the queue's order is not the listing's
    connection = await aio_pika.connect(rabbit_url, timeout=5)
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        dlx = await channel.get_exchange(broker_names.dlx_exchange)
        for event_id in ids:
            body = json.dumps({"id": str(event_id), "type": "tests.happened"}).encode()
            headers = {"x-original-queue": f"{prefix}.c", "x-consumer": "c", "x-retry-count": 5}
            await dlx.publish(aio_pika.Message(body, message_id=str(event_id), headers=headers), routing_key="c")
    dead = RabbitDeadLetters(bus)
    await _eventually(_holds(dead.count, len(ids)), "every dead letter")
    listed = await dead.peek(3)
    assert [letter.event_id for letter in listed] == sorted(ids)[:3]
    await _eventually(_holds(dead.count, len(ids)), "every letter back")
    queue = await dead._queue()
    again = await take_messages(queue, len(ids) + 1)
    try:
        assert [uuid.UUID(m.message_id or "") for m in again] == ids  # each in its place
    finally:
        await put_back(again)
    # RabbitMQ requeues them asynchronously: the count dips meanwhile (it read 489 of 500 once).
    await _eventually(_holds(dead.count, len(ids)), "every letter back after the second reading")
