"""A broadcast subscription's retry queues on real RabbitMQ: they belong to one instance, carry a
lease (``x-expires``) so a killed instance's go away, yet a live instance never loses its retries
to that lease, and one that stops cleanly leaves none behind."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aio_pika
import pytest
import structlog

from craig.adapters.rabbit.bus import RabbitEventBus
from craig.entrypoints.workers.messaging import consumers_running
from craig.ports.messaging import Subscription
from tests.contract.test_event_bus import Recorder, _event, _eventually, _has_effect, _inbox_row
from tests.support.buses import bus_container

pytestmark = pytest.mark.integration


async def _exists(url: str, queue: str) -> bool:
    connection = await aio_pika.connect(url, timeout=5)
    async with connection:
        channel = await connection.channel()
        try:
            await channel.declare_queue(queue, passive=True)
        except aio_pika.exceptions.ChannelNotFoundEntity:
            return False
        return True


def _retry_queues(bus: RabbitEventBus) -> list[str]:
    work = bus.work_queue(Subscription("recorder", ("tests.*",), Recorder(), broadcast=True))
    return [bus.retry_queue(work, level) for level in range(1, 6)]


async def test_a_live_instance_declares_an_expired_retry_queue_again_before_it_retries_into_it(
    request: pytest.FixtureRequest, tmp_path: Path, rabbit_url: str
) -> None:
    recorder = Recorder(fail_times=1)
    subscription = Subscription("recorder", ("tests.*",), recorder, broadcast=True)
    async with bus_container("rabbit", request, tmp_path) as container:
        bus = container.event_bus()
        bus.broadcast_queue_expires_ms = 1_000  # an hour in production
        first = _retry_queues(bus)[0]
        async with consumers_running(container, subscriptions=[subscription]):
            assert await _exists(rabbit_url, first)
            # No one consumes a retry queue, so RabbitMQ deletes it once its lease runs out
            # while the instance is alive and well: the premise, checked on the real broker.
            await _expired(rabbit_url, first, lease_seconds=1.0)
            envelope = _event()
            with structlog.testing.capture_logs() as logs:
                await bus.publish(envelope)
                await _eventually(lambda: _has_effect(container, envelope.id), "processing after 1 failure")
            assert recorder.calls[envelope.id] == 2
            record = await _inbox_row(container, subscription.inbox_consumer(container.instance_id()), envelope)
            assert record.error_count == 1 and record.processed_at is not None
            # Declared again before the retry went in (renewing, not repairing after a return),
            # and the retry went through the retry queue, not the pause-and-requeue path.
            assert await _exists(rabbit_url, first)
            assert not [line for line in logs if line["log_level"] == "warning"], logs


async def _expired(url: str, queue: str, lease_seconds: float) -> None:
    """Wait until RabbitMQ deleted ``queue`` for want of use. Each look declares it (passively),
    which renews its lease, so the looks are further apart than the lease."""
    for _ in range(20):
        await asyncio.sleep(lease_seconds * 1.5)
        if not await _exists(url, queue):
            return
    raise AssertionError(f"RabbitMQ never expired {queue}")


async def test_a_retry_queue_deleted_by_hand_is_declared_again_and_the_retry_goes_through(
    request: pytest.FixtureRequest, tmp_path: Path, rabbit_url: str
) -> None:
    recorder = Recorder(fail_times=1)
    subscription = Subscription("recorder", ("tests.*",), recorder, broadcast=True)
    async with bus_container("rabbit", request, tmp_path) as container:
        bus = container.event_bus()
        first = _retry_queues(bus)[0]
        async with consumers_running(container, subscriptions=[subscription]):
            connection = await aio_pika.connect(rabbit_url, timeout=5)
            async with connection:
                await (await connection.channel()).queue_delete(first)
            envelope = _event()
            with structlog.testing.capture_logs() as logs:
                await bus.publish(envelope)
                await _eventually(lambda: _has_effect(container, envelope.id), "processing after 1 failure")
            assert recorder.calls[envelope.id] == 2
            assert await _exists(rabbit_url, first)
            assert [line["queue"] for line in logs if "retry queue was gone" in line["event"]] == [first]
            assert not [line for line in logs if "could not settle" in line["event"]]


async def test_an_instance_that_stops_cleanly_deletes_its_broadcast_retry_queues(
    request: pytest.FixtureRequest, tmp_path: Path, rabbit_url: str
) -> None:
    subscription = Subscription("recorder", ("tests.*",), Recorder(), broadcast=True)
    async with bus_container("rabbit", request, tmp_path) as container:
        bus = container.event_bus()
        work, retries = bus.work_queue(subscription), _retry_queues(bus)
        async with consumers_running(container, subscriptions=[subscription]):
            assert [await _exists(rabbit_url, q) for q in [work, *retries]] == [True] * 6
        assert [await _exists(rabbit_url, q) for q in [work, *retries]] == [False] * 6
        # Consuming again after a clean stop declares them afresh.
        async with consumers_running(container, subscriptions=[subscription]):
            assert [await _exists(rabbit_url, q) for q in retries] == [True] * 5
        assert [await _exists(rabbit_url, q) for q in retries] == [False] * 5
