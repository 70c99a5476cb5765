"""Contract of InboxRepository + InboxStore, on every adapter (memory and PostgreSQL)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from craig.domain.events import EventEnvelope
from craig.ports.messaging import UNROUTED
from tests.support.backends import Backend

pytestmark = pytest.mark.contract


def event() -> EventEnvelope:
    return EventEnvelope(
        id=uuid.uuid4(),
        source="t",
        type="tests.x",
        occurred_at=datetime.now(UTC),
        payload={},
        aggregate_type="t",
        aggregate_id="1",
    )


def inbox(backend: Backend):  # type: ignore[no-untyped-def]
    from craig.adapters.memory.inbox import MemoryInboxStore
    from craig.adapters.postgres.inbox import PostgresInboxStore

    return MemoryInboxStore(backend.memory) if backend.memory else PostgresInboxStore(backend.postgres)


async def test_attempt_then_processed(backend: Backend) -> None:
    envelope = event()
    uow = backend.uow()
    async with uow:
        record = await uow.inbox.begin_attempt("c", envelope, "q.c")
        assert record.processed_at is None and record.error_count == 0 and record.envelope == envelope
        await uow.inbox.mark_processed("c", envelope.id)
        await uow.commit()
    async with uow:
        again = await uow.inbox.begin_attempt("c", envelope, "q.c")
        assert again.processed_at is not None
    async with uow:
        other = await uow.inbox.begin_attempt("another-consumer", envelope, "q.other")
        assert other.processed_at is None  # keyed by consumer and event


async def test_failures_count_keep_first_failure_and_dead_letter(backend: Backend) -> None:
    envelope = event()
    uow = backend.uow()
    async with uow:
        await uow.inbox.begin_attempt("c", envelope, "q.c")
        first = await uow.inbox.record_failure("c", envelope.id, "boom 1", retry_in=timedelta(seconds=30))
        await uow.commit()
    await backend.sleep(0.05)
    async with uow:
        dead = await uow.inbox.record_failure("c", envelope.id, "boom 2", retry_in=None)
        await uow.commit()
    assert first.error_count == 1 and first.failed_at is None and first.first_failed_at is not None
    assert dead.error_count == 2 and dead.failed_at is not None and dead.last_error == "boom 2"
    assert dead.first_failed_at == first.first_failed_at
    store = inbox(backend)
    assert [r.event_id for r in await store.dead_letters(10)] == [envelope.id]
    stats = await store.stats()
    assert (stats.dead, stats.retrying) == (1, 0)
    async with uow:
        assert await uow.inbox.reset_for_replay("c", envelope.id)
        await uow.commit()
    assert await store.dead_letters(10) == []
    assert [r.event_id for r in await store.claim_due(["c"], 10, timedelta(seconds=30))] == [envelope.id]


async def test_enqueue_claim_lease_and_backoff(backend: Backend) -> None:
    store = inbox(backend)
    first, second = event(), event()
    assert await store.enqueue("c", first, "q.c")
    assert not await store.enqueue("c", first, "q.c")  # a duplicate delivery is absorbed
    await store.enqueue("c", second, "q.c")
    await store.enqueue("other", event(), "q.other")
    claimed = await store.claim_due(["c"], 10, timedelta(seconds=0.3))
    assert [r.event_id for r in claimed] == [first.id, second.id]
    assert await store.claim_due(["c"], 10, timedelta(seconds=0.3)) == []  # leased
    uow = backend.uow()
    async with uow:
        await uow.inbox.begin_attempt("c", first, "q.c")
        await uow.inbox.mark_processed("c", first.id)
        await uow.inbox.begin_attempt("c", second, "q.c")
        await uow.inbox.record_failure("c", second.id, "later", retry_in=timedelta(seconds=0.6))
        await uow.commit()
    await backend.sleep(0.35)
    assert await store.claim_due(["c"], 10, timedelta(seconds=5)) == []  # backing off
    await backend.sleep(0.35)
    assert [r.event_id for r in await store.claim_due(["c"], 10, timedelta(seconds=5))] == [second.id]


async def test_concurrent_claims_never_share_a_row(backend: Backend) -> None:
    store = inbox(backend)
    for _ in range(20):
        await store.enqueue("c", event(), "q.c")
    batches = await asyncio.gather(*(store.claim_due(["c"], 5, timedelta(seconds=30)) for _ in range(6)))
    ids = [r.event_id for batch in batches for r in batch]
    assert len(ids) == len(set(ids)) == 20


async def test_purge_processed_rows(backend: Backend) -> None:
    envelope = event()
    uow = backend.uow()
    async with uow:
        await uow.inbox.begin_attempt("c", envelope, "q.c")
        await uow.inbox.mark_processed("c", envelope.id)
        await uow.commit()
    await backend.sleep(0.3)
    assert await inbox(backend).purge_processed(timedelta(seconds=0.2), 100) == 1


async def test_purge_broadcast_takes_only_old_leftovers_of_broadcast_keys(backend: Backend) -> None:
    store = inbox(backend)
    uow = backend.uow()

    async def dead(consumer: str) -> EventEnvelope:
        envelope = event()
        async with uow:
            await uow.inbox.begin_attempt(consumer, envelope, "q")
            await uow.inbox.record_failure(consumer, envelope.id, "boom", retry_in=None)
            await uow.commit()
        return envelope

    async def processed(consumer: str) -> EventEnvelope:
        envelope = event()
        async with uow:
            await uow.inbox.begin_attempt(consumer, envelope, "q")
            await uow.inbox.mark_processed(consumer, envelope.id)
            await uow.commit()
        return envelope

    gone = [event(), event()]
    for envelope in gone:
        await store.enqueue("rules-cache@gone-instance", envelope, "q")  # never processed: the instance died
    await dead("rules-cache@gone-instance")
    kept = {
        ("rules-cache@gone-instance", (await processed("rules-cache@gone-instance")).id),  # purge_processed's
        ("placements", (await dead("placements")).id),  # not a broadcast consumer
        ("rules-cache-v2@i", (await dead("rules-cache-v2@i")).id),  # another name that shares a prefix
    }
    for consumer in ("placements", "rules-cache-v2@i"):
        envelope = event()
        await store.enqueue(consumer, envelope, "q")
        kept.add((consumer, envelope.id))
    await backend.sleep(0.3)
    young = event()
    await store.enqueue("rules-cache@live-instance", young, "q")
    kept.add(("rules-cache@live-instance", young.id))
    young_dead = await dead("rules-cache@live-instance")
    kept.add(("rules-cache@live-instance", young_dead.id))

    assert await store.purge_broadcast(["rules-cache"], timedelta(seconds=0.2), 1) == 2  # one of each kind
    assert await store.purge_broadcast(["rules-cache"], timedelta(seconds=0.2), 1) == 1
    assert await store.purge_broadcast(["rules-cache"], timedelta(seconds=0.2), 1) == 0
    assert await store.purge_broadcast([], timedelta(0), 10) == 0
    assert await every_row(backend) == kept


async def every_row(backend: Backend) -> set[tuple[str, uuid.UUID]]:
    if backend.memory is not None:
        async with backend.memory.transaction() as tx:
            return {(r.consumer, r.event_id) for r in tx.rows("event_inbox")}
    assert backend.postgres is not None
    async with backend.postgres.transaction() as conn:
        rows = await conn.execute(text("SELECT consumer, event_id FROM event_inbox"))
        return {(consumer, event_id) for consumer, event_id in rows}


async def test_waiting_counts_a_consumers_undelivered_rows(backend: Backend) -> None:
    store = inbox(backend)
    delivered, waiting = event(), event()
    for envelope in (delivered, waiting):
        await store.enqueue("c", envelope, "q.c")
    await store.enqueue("other", event(), "q.other")
    uow = backend.uow()
    async with uow:
        await uow.inbox.begin_attempt("c", delivered, "q.c")
        await uow.inbox.mark_processed("c", delivered.id)
        await uow.commit()
    assert await store.waiting("c") == 1
    assert await store.waiting("nobody") == 0
    assert [r.event_id for r in await store.waiting_rows("c", 10)] == [waiting.id]
    assert await store.waiting_rows("nobody", 10) == []


async def test_waiting_rows_page_after_the_last_row_of_a_page(backend: Backend) -> None:
    """Pages in the same order as one read, each starting after the last row of the one before,
    whatever is deleted meanwhile; rows sharing an arrival time are told apart by their id."""
    store = inbox(backend)
    envelopes = [event() for _ in range(7)]
    for i, envelope in enumerate(envelopes):
        await store.enqueue("c", envelope, "q.c")
        if i % 2:
            await backend.sleep(0.002)  # on the memory adapter's fake clock, pairs share an arrival time
    whole = [r.event_id for r in await store.waiting_rows("c", 100)]
    assert sorted(whole) == sorted(e.id for e in envelopes)
    paged: list[uuid.UUID] = []
    after = None
    while rows := await store.waiting_rows("c", 3, after=after):
        paged += [r.event_id for r in rows]
        assert await store.delete_waiting("c", rows[0].event_id)  # a take removes as it goes
        after = rows[-1].waiting_key
    assert paged == whole
    assert await store.waiting_rows("other", 3, after=after) == []


async def test_only_a_waiting_row_is_deleted_as_one(backend: Backend) -> None:
    store = inbox(backend)
    first, second, done, dead = event(), event(), event(), event()
    for envelope in (first, second, done, dead):
        await store.enqueue("c", envelope, "q.c")
        await backend.sleep(0.002)  # distinct arrival times, on the fake clock too
    uow = backend.uow()
    async with uow:
        await uow.inbox.begin_attempt("c", done, "q.c")
        await uow.inbox.mark_processed("c", done.id)
        await uow.inbox.begin_attempt("c", dead, "q.c")
        await uow.inbox.record_failure("c", dead.id, "poison", retry_in=None)
        await uow.commit()
    assert [r.event_id for r in await store.waiting_rows("c", 1)] == [first.id]  # oldest first
    assert not await store.delete_waiting("c", done.id) and not await store.delete_waiting("c", dead.id)
    assert not await store.delete_waiting("other", first.id)
    assert await store.delete_waiting("c", first.id) and not await store.delete_waiting("c", first.id)
    assert [r.event_id for r in await store.waiting_rows("c", 10)] == [second.id]
    assert [r.event_id for r in await store.dead_letters(10)] == [dead.id]


async def test_unrouted_rows_are_purged_after_the_retention_and_other_waiting_rows_never(backend: Backend) -> None:
    store = inbox(backend)
    await store.enqueue(UNROUTED, event(), UNROUTED)
    await store.enqueue("c", event(), "q.c")  # a delivery nobody consumed yet: never purged
    await backend.sleep(0.3)
    fresh = event()
    await store.enqueue(UNROUTED, fresh, UNROUTED)
    assert await store.purge_processed(timedelta(seconds=0.2), 100) == 1
    assert await store.waiting(UNROUTED) == 1 and await store.waiting("c") == 1


async def test_a_row_that_can_never_be_delivered_is_dead_lettered_once(backend: Backend) -> None:
    store = inbox(backend)
    bad, done, fine = event(), event(), event()
    for envelope in (bad, done, fine):
        await store.enqueue("c", envelope, "q.c")
    uow = backend.uow()
    async with uow:
        await uow.inbox.begin_attempt("c", done, "q.c")
        await uow.inbox.mark_processed("c", done.id)
        await uow.commit()
    assert await store.dead_letter("c", bad.id, "unreadable")
    assert not await store.dead_letter("c", bad.id, "again")  # dead already
    assert not await store.dead_letter("c", done.id, "unreadable")  # processed: left alone
    assert not await store.dead_letter("c", uuid.uuid4(), "unreadable") and not await store.dead_letter(
        "other", fine.id, "unreadable"
    )
    [dead] = await store.dead_letters(10)
    assert (dead.event_id, dead.last_error, dead.error_count) == (bad.id, "unreadable", 1)
    assert dead.failed_at is not None and dead.first_failed_at is not None
    assert [r.event_id for r in await store.claim_due(["c"], 10, timedelta(seconds=5))] == [fine.id]
    assert await store.discard_dead("c", bad.id) and await store.dead_letters(10) == []
