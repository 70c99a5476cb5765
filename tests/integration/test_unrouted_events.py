"""Unroutable events on real RabbitMQ: kept in ``<prefix>.unrouted`` through the events
exchange's alternate exchange, and still kept when the exchange predates that argument."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import aio_pika
import pytest

from craig.adapters.rabbit.bus import ALTERNATE_EXCHANGE
from craig.domain.events import EventEnvelope
from craig.ports.messaging import UNROUTED
from tests.support.buses import bus_container
from tests.support.services import BrokerNames

pytestmark = [pytest.mark.integration, pytest.mark.rabbit, pytest.mark.postgres]


def _event(kind: str) -> EventEnvelope:
    return EventEnvelope(
        id=uuid.uuid4(),
        source="craig-tests",
        type=kind,
        occurred_at=datetime.now(UTC),
        payload={"x": 1},
        aggregate_type="test",
        aggregate_id="a",
    )


async def _take(rabbit_url: str, queue_name: str) -> aio_pika.abc.AbstractIncomingMessage | None:
    connection = await aio_pika.connect(rabbit_url)
    async with connection:
        channel = await connection.channel()
        queue = await channel.declare_queue(queue_name, passive=True)
        message = await queue.get(fail=False)
        if message is not None:
            await message.ack()
        return message


async def test_the_default_names_are_craig_unrouted() -> None:
    from craig.adapters.rabbit.bus import RabbitEventBus
    from craig.entrypoints.settings import BrokerSettings

    defaults = BrokerSettings()
    bus = RabbitEventBus(
        "amqp://127.0.0.1/",
        events_exchange=defaults.events_exchange,
        dlx_exchange=defaults.dlx_exchange,
        queue_prefix=defaults.queue_prefix,
        instance_id="x",
    )
    assert bus.unrouted_queue == UNROUTED == "craig.unrouted"
    assert bus.events.arguments == {ALTERNATE_EXCHANGE: "craig.events.unrouted"}


async def test_an_event_no_queue_takes_is_kept_by_the_alternate_exchange(
    request: pytest.FixtureRequest, tmp_path: Path, rabbit_url: str, broker_names: BrokerNames
) -> None:
    async with bus_container("rabbit", request, tmp_path) as container:
        bus = container.event_bus()
        await bus.connect([])
        assert bus.has_alternate_exchange is True
        envelope = _event("nobody.listens")
        await bus.publish(envelope)
        assert await container.unrouted_events().count() == 1
        message = await _take(rabbit_url, broker_names.unrouted_queue)
    assert message is not None and message.message_id == str(envelope.id)
    assert message.routing_key == "nobody.listens"  # as published: the alternate exchange keeps it


async def test_an_events_exchange_declared_without_the_alternate_exchange_still_keeps_unroutable_events(
    request: pytest.FixtureRequest, tmp_path: Path, rabbit_url: str, broker_names: BrokerNames
) -> None:
    connection = await aio_pika.connect(rabbit_url)
    async with connection:  # an exchange of an older Craig: no arguments
        channel = await connection.channel()
        await channel.declare_exchange(broker_names.events_exchange, aio_pika.ExchangeType.TOPIC, durable=True)
    async with bus_container("rabbit", request, tmp_path) as container:
        bus = container.event_bus()
        await bus.connect([])  # PRECONDITION_FAILED is handled: the exchange is used as it is
        assert bus.has_alternate_exchange is False
        envelope = _event("nobody.listens")
        await bus.publish(envelope)  # returned by RabbitMQ, then kept in the unrouted queue
        assert await container.unrouted_events().count() == 1
        assert "no alternate exchange" in container.unrouted_events().location
        await bus.ping()
        message = await _take(rabbit_url, broker_names.unrouted_queue)
    assert message is not None and message.message_id == str(envelope.id)
    assert message.headers["x-unrouted-exchange"] == broker_names.events_exchange
    assert message.headers["x-unrouted-routing-key"] == "nobody.listens"


async def test_publish_many_keeps_returned_events_in_the_unrouted_queue_too(
    request: pytest.FixtureRequest, tmp_path: Path, rabbit_url: str, broker_names: BrokerNames
) -> None:
    """The relay's batch path: an exchange without its alternate exchange returns the events no
    queue takes; each is then kept in the unrouted queue before its outcome says confirmed."""
    connection = await aio_pika.connect(rabbit_url)
    async with connection:  # an exchange of an older Craig: no arguments
        channel = await connection.channel()
        await channel.declare_exchange(broker_names.events_exchange, aio_pika.ExchangeType.TOPIC, durable=True)
    async with bus_container("rabbit", request, tmp_path) as container:
        bus = container.event_bus()
        await bus.connect([])
        assert bus.has_alternate_exchange is False
        envelopes = [_event("nobody.listens") for _ in range(3)]
        assert await bus.publish_many(envelopes, window=2) == [None, None, None]
        assert await container.unrouted_events().count() == 3
        taken = [await _take(rabbit_url, broker_names.unrouted_queue) for _ in envelopes]
    assert {m.message_id for m in taken if m is not None} == {str(e.id) for e in envelopes}
    assert all(m is not None and m.headers["x-unrouted-routing-key"] == "nobody.listens" for m in taken)
