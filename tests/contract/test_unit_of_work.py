"""Contract of the UnitOfWork itself (blocks, savepoints, the lazy begin, after-commit callbacks),
on every adapter. The effect under test is a staged outbox event."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import pytest

from craig.adapters.transaction import UnitOfWorkMisuse
from craig.domain.events import EventEnvelope
from tests.support.backends import Backend

pytestmark = pytest.mark.contract


def event() -> EventEnvelope:
    return EventEnvelope(
        id=uuid.uuid4(),
        source="t",
        type="tests.uow",
        occurred_at=datetime.now(UTC),
        payload={},
        aggregate_type="t",
        aggregate_id=str(uuid.uuid4()),
    )


async def pending(backend: Backend) -> int:
    return (await backend.outbox.stats()).pending


async def test_commit_keeps_and_leaving_without_commit_rolls_back(backend: Backend) -> None:
    uow = backend.uow()
    async with uow:
        await uow.outbox.stage(event())
        await uow.commit()
    async with uow:
        await uow.outbox.stage(event())
    with pytest.raises(RuntimeError):
        async with uow:
            await uow.outbox.stage(event())
            raise RuntimeError("use case failed")
    assert await pending(backend) == 1


async def test_a_nested_block_is_a_savepoint(backend: Backend) -> None:
    uow = backend.uow()
    async with uow:
        await uow.outbox.stage(event())
        async with uow:
            await uow.outbox.stage(event())  # rolled back alone
        async with uow:
            await uow.outbox.stage(event())
            await uow.commit()
        await uow.commit()
    assert await pending(backend) == 2


async def test_a_use_cases_commit_inside_an_owners_block_is_durable_only_when_the_owner_commits(
    backend: Backend,
) -> None:
    uow = backend.uow()
    async with uow:  # the owner (the HTTP idempotency layer) opens the transaction
        async with uow:  # the use case's block nests in it
            await uow.outbox.stage(event())
            await uow.commit()
        async with uow:  # a later block is a savepoint of the same transaction
            await uow.outbox.stage(event())
        await uow.commit()
    assert await pending(backend) == 1
    uow = backend.uow()
    async with uow:
        async with uow:
            await uow.outbox.stage(event())
            await uow.commit()
        # the owner leaves without committing (a 5xx answer): the use case's commit is void
    assert await pending(backend) == 1


async def test_an_owners_block_takes_nothing_until_it_is_used(backend: Backend) -> None:
    """The transaction begins when first needed, so a unit of work of its own (the first phase
    of an upload) commits while the request's block is open and has not touched the database:
    on the memory database it would otherwise wait forever for the one transaction."""
    owner = backend.uow()
    async with owner:
        phase1 = backend.uow()

        async def own_transaction() -> None:
            async with phase1:
                await phase1.outbox.stage(event())
                await phase1.commit()

        await asyncio.wait_for(own_transaction(), timeout=30)  # a deadlock guard, not a timing
        async with owner:
            await owner.outbox.stage(event())
            await owner.commit()
    assert await pending(backend) == 1


async def test_after_commit_runs_after_the_real_commit_and_never_after_a_rollback(backend: Backend) -> None:
    ran: list[str] = []
    uow = backend.uow()
    async with uow:
        uow.after_commit(lambda: ran.append("committed"))
        assert ran == []
        await uow.commit()
    assert ran == ["committed"]
    async with uow:
        uow.after_commit(lambda: ran.append("rolled back"))
    async with uow:
        async with uow:
            uow.after_commit(lambda: ran.append("savepoint rolled back"))
        uow.after_commit(lambda: ran.append("outer"))
        await uow.commit()
    assert ran == ["committed", "outer"]
    uow = backend.uow()
    async with uow:  # an owner's block around the use case's
        async with uow:
            uow.after_commit(lambda: ran.append("nested"))
            await uow.commit()
        assert ran[-1] == "outer"
        await uow.commit()
    assert ran[-1] == "nested"


async def test_misuse_is_refused(backend: Backend) -> None:
    uow = backend.uow()
    with pytest.raises(UnitOfWorkMisuse):
        await uow.commit()
    with pytest.raises(UnitOfWorkMisuse):
        uow.after_commit(lambda: None)
    with pytest.raises(UnitOfWorkMisuse):
        await uow.outbox.stage(event())
