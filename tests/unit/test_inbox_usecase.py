"""``handle_idempotently`` on the memory inbox: a redelivered dead letter is dead-lettered again."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from craig.adapters.memory.database import MemoryDatabase
from craig.adapters.memory.uow import MemoryUnitOfWork
from craig.domain.events import EventEnvelope
from craig.ports.messaging import NonRetryable
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.events import AlreadyHandled, DeadLettered, Processed, handle_idempotently
from tests.support.ciphers import TEST_CIPHER

pytestmark = pytest.mark.unit


def _envelope() -> EventEnvelope:
    return EventEnvelope(
        id=uuid.uuid4(),
        source="craig-tests",
        type="tests.happened",
        occurred_at=datetime.now(UTC),
        payload={},
        aggregate_type="test",
        aggregate_id="a",
    )


async def test_a_dead_letter_delivered_again_is_dead_lettered_again_not_acknowledged() -> None:
    db = MemoryDatabase()
    calls: list[uuid.UUID] = []

    async def poison(envelope: EventEnvelope, uow: UnitOfWork) -> None:
        calls.append(envelope.id)
        raise NonRetryable("no")

    envelope = _envelope()
    first = await handle_idempotently(MemoryUnitOfWork(db, TEST_CIPHER), envelope, poison, "c", "q")
    again = await handle_idempotently(MemoryUnitOfWork(db, TEST_CIPHER), envelope, poison, "c", "q")
    assert isinstance(first, DeadLettered) and not first.again
    assert isinstance(again, DeadLettered) and again.again
    assert again.decision == first.decision and again.record.last_error == first.record.last_error
    assert calls == [envelope.id]  # the handler does not run again


async def test_a_processed_event_delivered_again_is_acknowledged() -> None:
    db = MemoryDatabase()

    async def fine(envelope: EventEnvelope, uow: UnitOfWork) -> None:
        return None

    envelope = _envelope()
    assert isinstance(await handle_idempotently(MemoryUnitOfWork(db, TEST_CIPHER), envelope, fine, "c", "q"), Processed)
    again = await handle_idempotently(MemoryUnitOfWork(db, TEST_CIPHER), envelope, fine, "c", "q")
    assert isinstance(again, AlreadyHandled)
