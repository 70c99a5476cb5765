"""A dead letter reaches the dead-letter queue before its message is acknowledged, on real
RabbitMQ, even when the publish to the dead-letter exchange fails after the inbox recorded it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from craig.domain.events import EventEnvelope
from craig.entrypoints.workers.messaging import consumers_running
from craig.ports.errors import BrokerUnavailable
from craig.ports.messaging import NonRetryable, Subscription
from craig.ports.unit_of_work import UnitOfWork
from tests.support.buses import bus_container
from tests.support.services import BrokerNames

pytestmark = [pytest.mark.integration, pytest.mark.rabbit, pytest.mark.postgres]


async def _eventually(check: Callable[[], Awaitable[bool]], what: str, seconds: float = 30) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.05)


async def test_a_dead_letter_whose_first_dlx_publish_failed_still_reaches_the_dead_letter_queue(
    request: pytest.FixtureRequest, tmp_path: Path, broker_names: BrokerNames
) -> None:
    calls: list[uuid.UUID] = []

    async def poison(envelope: EventEnvelope, uow: UnitOfWork) -> None:
        calls.append(envelope.id)
        raise NonRetryable("payload makes no sense")

    broker_names.queue("poisoned")
    broker_names.queues.extend(f"{broker_names.queue_prefix}.poisoned.retry.{n}" for n in range(1, 6))
    async with bus_container("rabbit", request, tmp_path) as container:
        bus = container.event_bus()
        real_publish_dlx = bus.publish_dlx
        attempts: list[str] = []

        async def publish_dlx_failing_once(body: bytes, **kwargs: Any) -> None:
            attempts.append(kwargs["original_queue"])
            if len(attempts) == 1:
                raise BrokerUnavailable("publish not confirmed: the DLX is unreachable (injected)")
            await real_publish_dlx(body, **kwargs)

        bus.publish_dlx = publish_dlx_failing_once
        envelope = EventEnvelope(
            id=uuid.uuid4(),
            source="craig-tests",
            type="tests.poisoned",
            occurred_at=datetime.now(UTC),
            payload={"x": 1},
            aggregate_type="test",
            aggregate_id="a",
        )
        dead_letters = container.dead_letter_operations()
        async with consumers_running(container, subscriptions=[Subscription("poisoned", ("tests.*",), poison)]):
            await bus.publish(envelope)

            async def in_the_dead_letter_queue() -> bool:
                return [letter.event_id for letter in await dead_letters.peek(10)] == [envelope.id]

            await _eventually(in_the_dead_letter_queue, "the dead letter in the dead-letter queue")
        assert len(attempts) == 2  # the failed publish, then the one after the redelivery
        assert calls == [envelope.id]  # the handler ran once; the redelivery only dead-lettered it
        letter = (await dead_letters.peek(10))[0]
        assert "NonRetryable" in letter.last_error and letter.consumer == "poisoned"


WINDOW_SECONDS = 4.0
#: Attempts the settle backoff allows in the window: pauses of at least 0.125, 0.25, 0.5, 1, 2 s
#: (half of 0.25 s doubling, the lower bound of the jitter) sum past 3.8 s, so at most 6 attempts
#: fit in 4 s however fast the machine is. A tight loop makes dozens to hundreds.
MOST_ATTEMPTS_IN_WINDOW = 8


async def test_a_dlx_publish_that_keeps_failing_is_retried_after_pauses_not_in_a_tight_loop(
    request: pytest.FixtureRequest, tmp_path: Path, broker_names: BrokerNames
) -> None:
    async def poison(envelope: EventEnvelope, uow: UnitOfWork) -> None:
        raise NonRetryable("payload makes no sense")

    broker_names.queue("poisoned")
    broker_names.queues.extend(f"{broker_names.queue_prefix}.poisoned.retry.{n}" for n in range(1, 6))
    async with bus_container("rabbit", request, tmp_path) as container:
        bus = container.event_bus()
        real_publish_dlx = bus.publish_dlx
        attempts: list[float] = []
        dlx_down = True

        async def publish_dlx_failing(body: bytes, **kwargs: Any) -> None:
            attempts.append(asyncio.get_running_loop().time())
            if dlx_down:
                raise BrokerUnavailable("publish not confirmed: the DLX is unreachable (injected)")
            await real_publish_dlx(body, **kwargs)

        bus.publish_dlx = publish_dlx_failing
        envelope = EventEnvelope(
            id=uuid.uuid4(),
            source="craig-tests",
            type="tests.poisoned",
            occurred_at=datetime.now(UTC),
            payload={"x": 1},
            aggregate_type="test",
            aggregate_id="a",
        )
        dead_letters = container.dead_letter_operations()
        async with consumers_running(container, subscriptions=[Subscription("poisoned", ("tests.*",), poison)]):
            await bus.publish(envelope)
            await _eventually(lambda: _truthy(attempts), "a first dead-letter attempt")
            await asyncio.sleep(WINDOW_SECONDS)
            failed = len(attempts)
            assert 2 <= failed <= MOST_ATTEMPTS_IN_WINDOW, f"{failed} DLX attempts in {WINDOW_SECONDS} s"
            dlx_down = False  # the DLX is back: the message still gets there

            async def in_the_dead_letter_queue() -> bool:
                return [letter.event_id for letter in await dead_letters.peek(10)] == [envelope.id]

            await _eventually(in_the_dead_letter_queue, "the dead letter in the dead-letter queue", seconds=60)
        assert len(attempts) == failed + 1


async def _truthy(items: list[float]) -> bool:
    return bool(items)
