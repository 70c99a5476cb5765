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
from craig.entrypoints.settings import InboxSettings
from craig.entrypoints.workers.messaging import consumers_running
from craig.ports.messaging import Subscription
from tests.contract.test_event_bus import Recorder, _event, _eventually, _has_effect, _inbox_row
from tests.support.buses import bus_container
from tests.support.services import queue_exists

pytestmark = pytest.mark.integration


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
        bus.broadcast_queue_expires_ms = 2_000  # an hour in production
        first = _retry_queues(bus)[0]
        async with consumers_running(container, subscriptions=[subscription]):
            assert await queue_exists(rabbit_url, first)
            # No one consumes a retry queue, so RabbitMQ deletes it once its lease runs out
            # while the instance is alive and well: the premise, checked on the real broker.
            await _expired(rabbit_url, first, lease_seconds=2.0)
            envelope = _event()
            with structlog.testing.capture_logs() as logs:
                await bus.publish(envelope)
                await _eventually(lambda: _has_effect(container, envelope.id), "processing after 1 failure")
            assert recorder.calls[envelope.id] == 2
            record = await _inbox_row(container, subscription.inbox_consumer(container.instance_id()), envelope)
            assert record.error_count == 1 and record.processed_at is not None
            # Declared again before the retry went in (renewing, not repairing after a return),
            # and the retry went through the retry queue, not the pause-and-requeue path.
            assert not [line for line in logs if line["log_level"] == "warning"], logs


async def test_a_broadcast_retry_waits_at_most_half_the_lease_of_its_queue(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A retry longer than the queue's lease would be deleted with its queue: it is shortened."""
    recorder = Recorder(fail_times=1)
    subscription = Subscription("recorder", ("tests.*",), recorder, broadcast=True)
    ten_minutes = InboxSettings(backoff_base_seconds=600, backoff_cap_seconds=600)
    async with bus_container("rabbit", request, tmp_path, inbox=ten_minutes) as container:
        bus = container.event_bus()
        bus.broadcast_queue_expires_ms = 2_000
        async with consumers_running(container, subscriptions=[subscription]):
            envelope = _event()
            await bus.publish(envelope)
            # The backoff is 10 minutes: only a wait shortened to half the lease (1 s) lets the
            # retry come back before _eventually gives up (30 s).
            await _eventually(lambda: _has_effect(container, envelope.id), "the retry, after at most 1 s")
        assert recorder.calls[envelope.id] == 2


async def test_a_refused_declaration_of_a_retry_queue_leaves_the_consumers_working(
    request: pytest.FixtureRequest, tmp_path: Path, rabbit_url: str
) -> None:
    """Someone made a retry queue again by hand, with other arguments: declaring it as Craig did
    is refused (PRECONDITION_FAILED), which closes the channel it was tried on. That is a channel
    of its own: the message goes round the pause-and-requeue path and every delivery goes on."""
    recorder = Recorder(fail_times=1)
    subscription = Subscription("recorder", ("tests.*",), recorder, broadcast=True)
    async with bus_container("rabbit", request, tmp_path) as container:
        bus = container.event_bus()
        bus.broadcast_queue_expires_ms = 200  # a lease so short that the retry below renews it first
        first = _retry_queues(bus)[0]
        async with consumers_running(container, subscriptions=[subscription]):
            connection = await aio_pika.connect(rabbit_url, timeout=5)
            async with connection:
                channel = await connection.channel()
                await channel.queue_delete(first)
                await channel.declare_queue(first, durable=True)
            await asyncio.sleep(0.2)  # more than half the lease has run since the bus declared it
            first_event, next_event = _event(), _event()
            with structlog.testing.capture_logs() as logs:
                await bus.publish(first_event)
                await _eventually(lambda: _has_effect(container, first_event.id), "processing after a requeue")
                # The consumers' channel is untouched: the next event is delivered, and fares the same.
                await bus.publish(next_event)
                await _eventually(lambda: _has_effect(container, next_event.id), "the next delivery")
            assert recorder.calls[first_event.id] == 2 and recorder.calls[next_event.id] == 2
            refused = [line for line in logs if "could not settle" in line["event"]]
            assert len(refused) == 2 and all("PRECONDITION_FAILED" in line["error"] for line in refused), logs
        assert not await queue_exists(rabbit_url, first)  # deleted with the instance's own, all the same


async def _expired(url: str, queue: str, lease_seconds: float) -> None:
    """Wait until RabbitMQ deleted ``queue`` for want of use. Each look declares it (passively),
    which renews its lease, so the looks are further apart than the lease."""
    for _ in range(20):
        await asyncio.sleep(lease_seconds * 1.5)
        if not await queue_exists(url, queue):
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
            assert await queue_exists(rabbit_url, first)
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
            assert [await queue_exists(rabbit_url, q) for q in [work, *retries]] == [True] * 6
        assert [await queue_exists(rabbit_url, q) for q in [work, *retries]] == [False] * 6
        # Consuming again after a clean stop declares them afresh.
        async with consumers_running(container, subscriptions=[subscription]):
            assert [await queue_exists(rabbit_url, q) for q in retries] == [True] * 5
        assert [await queue_exists(rabbit_url, q) for q in retries] == [False] * 5
