"""One harness per database adapter, so a contract suite runs unchanged on each.

``advance(seconds)`` moves time forward: the fake clock for memory, a real sleep for PostgreSQL
(whose ``now()`` is the clock that claims and leases use).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs

from craig.adapters.memory.database import MemoryDatabase
from craig.adapters.memory.exchange import memory_job_wake
from craig.adapters.memory.idempotency import MemoryIdempotencyStore
from craig.adapters.memory.outbox import MemoryOutboxRelayStore
from craig.adapters.memory.uow import MemoryUnitOfWork
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.idempotency import PostgresIdempotencyStore
from craig.adapters.postgres.notify import PostgresListener
from craig.adapters.postgres.outbox import PostgresOutboxRelayStore
from craig.adapters.postgres.send_job_queue import PostgresSendJobQueue, listener_job_wake
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.adapters.send_job_queue import UnitOfWorkSendJobQueue
from craig.entrypoints.profiles.postgres import LISTEN_CHANNELS
from craig.ports.exchange import SendJobQueue
from craig.ports.unit_of_work import UnitOfWork
from tests.support.ciphers import TEST_CIPHER
from tests.support.clock import FakeClock


@attrs.define
class Backend:
    kind: str
    uow: Callable[[], UnitOfWork]
    idempotency: Any
    outbox: Any
    advance: Callable[[float], Any]
    send_job_queue: SendJobQueue
    memory: MemoryDatabase | None = None
    postgres: PostgresDatabase | None = None
    clock: FakeClock | None = None

    async def sleep(self, seconds: float) -> None:
        result = self.advance(seconds)
        if asyncio.iscoroutine(result):
            await result


@asynccontextmanager
async def memory_backend() -> AsyncIterator[Backend]:
    clock = FakeClock()
    db = MemoryDatabase(clock=clock)
    yield Backend(
        kind="memory",
        uow=lambda: MemoryUnitOfWork(db, TEST_CIPHER),
        idempotency=MemoryIdempotencyStore(db, TEST_CIPHER),
        outbox=MemoryOutboxRelayStore(db),
        send_job_queue=UnitOfWorkSendJobQueue(lambda: MemoryUnitOfWork(db, TEST_CIPHER), memory_job_wake(db)),
        advance=clock.advance,
        memory=db,
        clock=clock,
    )


@asynccontextmanager
async def postgres_backend(url: str) -> AsyncIterator[Backend]:
    db = PostgresDatabase(url, pool_size=20, max_overflow=100)
    listener = PostgresListener(url, LISTEN_CHANNELS)
    await listener.start()
    for _ in range(100):
        if listener.connected:
            break
        await asyncio.sleep(0.02)
    queue = PostgresSendJobQueue(db, TEST_CIPHER, listener_job_wake(listener))
    try:
        yield Backend(
            kind="postgres",
            uow=lambda: PostgresUnitOfWork(db, TEST_CIPHER),
            idempotency=PostgresIdempotencyStore(db, TEST_CIPHER, listener),
            outbox=PostgresOutboxRelayStore(db, listener),
            send_job_queue=queue,
            advance=asyncio.sleep,
            postgres=db,
        )
    finally:
        await queue.aclose()
        await listener.stop()
        await db.dispose()
