"""Order per aggregate on real PostgreSQL: the events of one aggregate are numbered (``seq``, the
relay's order) in the order their transactions commit, however many writers race, the send-job
worker's one-statement pass among them.

The use cases do not lock the case when they record a contact; the outbox writer serialises
them. Each unit of work here waits a random moment between staging and COMMIT, and records the
order in which the COMMITs complete (one at a time, under a lock, so the record is exact)."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta

import attrs
import pytest
from sqlalchemy import text

from craig.adapters.clock import SystemClock
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.domain.access import Principal, Role
from craig.domain.event_catalogue import EXCHANGE_SENT
from craig.domain.events import EventEnvelope
from craig.domain.exchange import AttemptDecision, JobStatus
from craig.ports.exchange import JobOutcome
from craig.ports.outbox import OutboxWriter
from craig.usecases.cases import OpenCase, RecordContact
from craig.usecases.exchange import outcome_event
from tests.support.backends import postgres_backend
from tests.support.ciphers import TEST_CIPHER
from tests.support.exchange_data import add_partner, add_transaction

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

WRITERS = 30


class _Recording(OutboxWriter):
    def __init__(self, inner: OutboxWriter, staged: list[uuid.UUID]) -> None:
        self.inner = inner
        self.staged = staged

    async def stage(self, envelope: EventEnvelope) -> None:
        await self.inner.stage(envelope)
        self.staged.append(envelope.id)

    async def stage_many(self, envelopes: Sequence[EventEnvelope]) -> None:
        await self.inner.stage_many(envelopes)
        self.staged.extend(e.id for e in envelopes)


class CommitOrder:
    """Units of work that pause between their last statement and COMMIT, and log commits."""

    def __init__(self, database: PostgresDatabase, seed: int) -> None:
        self.database = database
        self.rng = random.Random(seed)
        self.lock = asyncio.Lock()
        self.committed: list[uuid.UUID] = []

    def uow(self) -> PostgresUnitOfWork:
        log = self

        class Uow(PostgresUnitOfWork):
            def __init__(self) -> None:
                super().__init__(log.database, TEST_CIPHER)
                self.staged: list[uuid.UUID] = []
                self.outbox = _Recording(self.outbox, self.staged)

            async def _commit(self) -> None:
                await asyncio.sleep(log.rng.uniform(0, 0.03))
                async with log.lock:
                    await super()._commit()
                    log.committed.extend(self.staged)

        return Uow()


@pytest.fixture
async def database(pg_url: str) -> AsyncIterator[PostgresDatabase]:
    database = PostgresDatabase(pg_url, pool_size=WRITERS + 5, max_overflow=10)
    try:
        yield database
    finally:
        await database.dispose()


async def _outbox_order(database: PostgresDatabase, aggregate_type: str, aggregate_id: str) -> list[uuid.UUID]:
    async with database.transaction() as conn:
        rows = await conn.execute(
            text("SELECT id FROM event_outbox WHERE aggregate_type = :t AND aggregate_id = :i ORDER BY seq"),
            {"t": aggregate_type, "i": aggregate_id},
        )
        return [row[0] for row in rows]


async def test_concurrent_contacts_on_one_case_are_numbered_in_commit_order(database: PostgresDatabase) -> None:
    clock = SystemClock()
    ann = Principal(uuid.uuid4(), "Ann", Role.CASEWORKER)
    case = await OpenCase(PostgresUnitOfWork(database, TEST_CIPHER), clock)(
        ann, title="Doe family", family_name="Doe", opened_at=None
    )
    commits = CommitOrder(database, seed=11)

    async def record(n: int) -> None:
        await RecordContact(commits.uow(), clock)(
            ann,
            case.id,
            contact_type="home_visit",
            occurred_at=datetime.now(UTC) - timedelta(hours=1),
            summary=f"visit {n}",
        )

    await asyncio.gather(*(record(n) for n in range(WRITERS)))
    order = await _outbox_order(database, "case", str(case.id))
    assert len(commits.committed) == WRITERS
    assert order[1:] == commits.committed  # the first is cases.case_opened


def _event(aggregate: str, n: int) -> EventEnvelope:
    return EventEnvelope(
        id=uuid.uuid4(),
        source="craig-tests",
        type="tests.happened",
        occurred_at=datetime.now(UTC),
        payload={"n": n},
        aggregate_type="test",
        aggregate_id=aggregate,
    )


async def test_writers_staging_several_aggregates_in_any_order_neither_deadlock_nor_reorder(
    database: PostgresDatabase,
) -> None:
    aggregates = [f"agg-{n}" for n in range(5)]
    commits = CommitOrder(database, seed=5)
    rng = random.Random(3)

    async def writer(n: int) -> None:
        uow = commits.uow()
        async with uow:
            await uow.outbox.stage_many([_event(a, n) for a in rng.sample(aggregates, len(aggregates))])
            await uow.commit()

    await asyncio.gather(*(writer(n) for n in range(WRITERS)))
    for aggregate in aggregates:
        order = await _outbox_order(database, "test", aggregate)
        assert order == [event_id for event_id in commits.committed if event_id in set(order)]
        assert len(order) == WRITERS


async def test_the_send_job_pass_and_a_writer_of_the_same_job_are_numbered_in_commit_order(pg_url: str) -> None:
    """A transaction stages an event for a send job and has not committed yet; meanwhile the
    worker's pass records the job's outcome and stages its ``exchange.sent``. The pass takes the
    outbox's lock of the aggregate like every writer, so it waits: whichever order the two
    commit in, their ``seq`` follows it (were the pass to go first, a relay could publish its
    event before the writer's older one)."""
    lease, max_wait = timedelta(minutes=1), timedelta(seconds=10)
    async with postgres_backend(pg_url) as backend:
        database = backend.postgres
        assert database is not None
        [job] = (await add_transaction(backend, [(await add_partner(backend)).id]))[1]
        [claim] = (await backend.send_job_queue.run_pass([], 1, lease, max_wait)).claims
        sent = AttemptDecision(JobStatus.SENT, event_type=EXCHANGE_SENT)
        pass_event = outcome_event(claim.job, sent, datetime.now(UTC))
        writer_event = attrs.evolve(
            _event(str(job.id), 0), aggregate_type=pass_event.aggregate_type, type="tests.noted"
        )
        committed: list[uuid.UUID] = []
        writer = PostgresUnitOfWork(database, TEST_CIPHER)
        async with writer:
            await writer.outbox.stage(writer_event)
            recording = asyncio.create_task(
                backend.send_job_queue.run_pass([JobOutcome(claim.job, sent, pass_event)], 0, lease, max_wait)
            )
            for _ in range(500):  # until the pass has committed, or waits for the aggregate's lock
                if recording.done() or await _waiting_for_an_advisory_lock(database):
                    break
                await asyncio.sleep(0.01)
            if recording.done():
                committed.append(pass_event.id)
            await writer.commit()
        committed.append(writer_event.id)
        assert (await recording).recorded == {job.id}
        if pass_event.id not in committed:
            committed.append(pass_event.id)
        assert await _outbox_order(database, pass_event.aggregate_type, str(job.id)) == committed
        assert committed == [writer_event.id, pass_event.id]  # the pass waited for the writer


async def _waiting_for_an_advisory_lock(database: PostgresDatabase) -> bool:
    async with database.transaction() as conn:
        waiting = await conn.execute(text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"))
        return int(waiting.scalar_one()) > 0
