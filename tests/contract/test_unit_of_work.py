"""Contract of the UnitOfWork itself (blocks, savepoints, held commits, after-commit callbacks),
on every adapter. The effect under test is a staged outbox event."""

from __future__ import annotations

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


async def test_held_commits_become_durable_at_release_only(backend: Backend) -> None:
    uow = backend.uow()
    uow.hold_commits()
    async with uow:
        await uow.outbox.stage(event())
        await uow.commit()
    assert uow.has_pending_commit
    async with uow:  # a later block is a savepoint of the held transaction
        await uow.outbox.stage(event())
    await uow.release(commit=True)
    assert not uow.has_pending_commit
    assert await pending(backend) == 1
    uow = backend.uow()
    uow.hold_commits()
    async with uow:
        await uow.outbox.stage(event())
        await uow.commit()
    await uow.release(commit=False)
    assert await pending(backend) == 1


async def test_commit_immediately_is_durable_even_when_commits_are_held(backend: Backend) -> None:
    uow = backend.uow()
    uow.hold_commits()
    async with uow:
        await uow.outbox.stage(event())
        await uow.commit(immediately=True)
    async with uow:
        await uow.outbox.stage(event())
        await uow.commit()
    await uow.release(commit=False)
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
    uow.hold_commits()
    async with uow:
        uow.after_commit(lambda: ran.append("held"))
        await uow.commit()
    assert ran[-1] == "outer"
    await uow.release(commit=True)
    assert ran[-1] == "held"


async def test_misuse_is_refused(backend: Backend) -> None:
    uow = backend.uow()
    with pytest.raises(UnitOfWorkMisuse):
        await uow.commit()
    with pytest.raises(UnitOfWorkMisuse):
        uow.after_commit(lambda: None)
    with pytest.raises(UnitOfWorkMisuse):
        await uow.outbox.stage(event())
